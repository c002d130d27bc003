//! With the `ptscotch` feature: finds the width of `SCOTCH_Num` in the installed header (32 or
//! 64 bits; Debian's default is 32) and links PT-Scotch.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(scotch_num64)");
    println!("cargo::rerun-if-env-changed=OP2_SCOTCH_INCLUDE");
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
