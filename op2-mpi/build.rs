//! With the `ptscotch` feature: finds the width of `SCOTCH_Num` in the installed header (32 or
//! 64 bits; Debian's default is 32) and links PT-Scotch. With the `parmetis` feature: finds the
//! widths of ParMETIS's `idx_t` and `real_t` in the installed headers (PT-Scotch's ParMETIS
//! interface, Debian's `libscotchparmetis-dev`, or ParMETIS itself with its `metis.h`).

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(scotch_num64)");
    println!("cargo::rustc-check-cfg=cfg(parmetis_idx64)");
    println!("cargo::rustc-check-cfg=cfg(parmetis_real64)");
    println!("cargo::rustc-check-cfg=cfg(parmetis_scotch)");
    println!("cargo::rerun-if-env-changed=OP2_SCOTCH_INCLUDE");
    println!("cargo::rerun-if-env-changed=OP2_PARMETIS_INCLUDE");
    println!("cargo::rerun-if-env-changed=OP2_PARMETIS_LIB");
    if std::env::var_os("CARGO_FEATURE_PARMETIS").is_some() {
        parmetis();
    }
    if std::env::var_os("CARGO_FEATURE_PTSCOTCH").is_none() {
        return;
    }
    let dirs: Vec<PathBuf> = std::env::var_os("OP2_SCOTCH_INCLUDE")
        .map(|d| vec![PathBuf::from(d)])
        .unwrap_or_else(|| {
            ["/usr/include/scotch", "/usr/include", "/usr/local/include"]
                .iter()
                .map(PathBuf::from)
                .collect()
        });
    let header = dirs
        .iter()
        .map(|d| d.join("scotch.h"))
        .find(|h| h.exists())
        .unwrap_or_else(|| {
            panic!(
                "the `ptscotch` feature needs PT-Scotch's headers (Debian: apt-get install \
                 libptscotch-dev), or OP2_SCOTCH_INCLUDE naming the folder of scotch.h; looked in {dirs:?}"
            )
        });
    println!("cargo::rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(&header).expect("scotch.h is readable");
    let typedef = text
        .lines()
        .find(|l| l.contains("typedef") && l.contains("SCOTCH_Num;"))
        .unwrap_or_else(|| panic!("no SCOTCH_Num typedef in {}", header.display()));
    let wide = ["int64_t", "long", "intptr_t"]
        .iter()
        .any(|t| typedef.contains(t));
    if wide {
        println!("cargo::rustc-cfg=scotch_num64");
    }
}

/// Whether a C type named in a typedef or define is 64 bits wide.
fn wide(text: &str) -> bool {
    ["int64_t", "long", "intptr_t", "64"]
        .iter()
        .any(|t| text.contains(t))
}

/// The widths of `idx_t` and `real_t` of the installed `parmetis.h`: PT-Scotch's interface
/// (whose integers are `SCOTCH_Num` and whose reals are `float`; the running library's width
/// is checked against it) or ParMETIS 4's own (whose widths are `IDXTYPEWIDTH` and
/// `REALTYPEWIDTH` of `metis.h`). `OP2_PARMETIS_LIB` names the folder of its library.
fn parmetis() {
    if let Some(dir) = std::env::var_os("OP2_PARMETIS_LIB") {
        println!(
            "cargo::rustc-link-search=native={}",
            PathBuf::from(dir).display()
        );
    }
    let dirs: Vec<PathBuf> = std::env::var_os("OP2_PARMETIS_INCLUDE")
        .map(|d| vec![PathBuf::from(d)])
        .unwrap_or_else(|| {
            [
                "/usr/include/parmetis",
                "/usr/include",
                "/usr/local/include",
            ]
            .iter()
            .map(PathBuf::from)
            .collect()
        });
    let Some(dir) = dirs.iter().find(|d| d.join("parmetis.h").exists()) else {
        panic!(
            "the `parmetis` feature needs ParMETIS's header (Debian: apt-get install \
             libscotchparmetis-dev, PT-Scotch's ParMETIS interface), or OP2_PARMETIS_INCLUDE \
             naming the folder of parmetis.h; looked in {dirs:?}"
        )
    };
    let header = dir.join("parmetis.h");
    println!("cargo::rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(&header).expect("parmetis.h is readable");
    // ParMETIS 3 (and PT-Scotch's interface before 6.1) returned nothing from its calls;
    // op2-mpi reads ParMETIS 4's status.
    let returns_int = text
        .lines()
        .filter_map(|l| l.find("ParMETIS_V3_PartKway").map(|at| &l[..at]))
        .any(|before| before.contains("int") && !before.contains("void"));
    if !returns_int {
        panic!(
            "{}: not ParMETIS 4's interface (ParMETIS_V3_PartKway returning int); the `parmetis` \
             feature needs ParMETIS 4 or PT-Scotch's interface (Debian's libscotchparmetis-dev)",
            header.display()
        );
    }
    if text.contains("SCOTCH_ParMETIS") {
        println!("cargo::rustc-cfg=parmetis_scotch");
        // PT-Scotch's: `SCOTCH_Num` from scotch.h when it was included first, else its own int.
        let scotch = text
            .lines()
            .find(|l| l.contains("typedef") && l.contains("SCOTCH_Num;"))
            .unwrap_or("typedef int SCOTCH_Num;");
        if wide(scotch) {
            println!("cargo::rustc-cfg=parmetis_idx64");
        }
        return;
    }
    // ParMETIS itself: metis.h beside it (or in the other folders).
    let metis = std::iter::once(dir.clone())
        .chain(dirs.iter().cloned())
        .map(|d| d.join("metis.h"))
        .find(|h| h.exists())
        .unwrap_or_else(|| panic!("ParMETIS's parmetis.h in {} but no metis.h", dir.display()));
    println!("cargo::rerun-if-changed={}", metis.display());
    let text = std::fs::read_to_string(&metis).expect("metis.h is readable");
    let width = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("#define") && l.contains(name))
            .is_some_and(wide)
    };
    if width("IDXTYPEWIDTH") {
        println!("cargo::rustc-cfg=parmetis_idx64");
    }
    if width("REALTYPEWIDTH") {
        println!("cargo::rustc-cfg=parmetis_real64");
    }
}
