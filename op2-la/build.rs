//! Build script: with feature `petsc`, compiles the C shim over PETSc (found with pkg-config);
//! with feature `openmp`, the assembly pass for OpenMP's threads.

fn main() {
    #[cfg(feature = "petsc")]
    petsc();
    #[cfg(feature = "openmp")]
    openmp();
}

/// The assembly pass on OpenMP's threads: compiled with `-fopenmp`, linked with libgomp.
#[cfg(feature = "openmp")]
fn openmp() {
    println!("cargo:rerun-if-changed=csrc/apply_omp.c");
    cc::Build::new()
        .file("csrc/apply_omp.c")
        .flag("-fopenmp")
        .opt_level(3)
        .warnings(true)
        .compile("op2la_apply_omp");
    println!("cargo:rustc-link-lib=gomp");
}

#[cfg(feature = "petsc")]
fn petsc() {
    println!("cargo:rerun-if-changed=csrc/petsc_shim.c");
    let lib = pkg_config::Config::new()
        .atleast_version("3.10")
        .probe("PETSc")
        .or_else(|_| {
            pkg_config::Config::new()
                .atleast_version("3.10")
                .probe("petsc")
        })
        .unwrap_or_else(|e| {
            panic!(
                "feature `petsc` needs PETSc's development files (Debian: apt-get install \
                 libpetsc-real-dev), found with pkg-config: {e}"
            )
        });
    // PETSc's headers include mpi.h and the shim names MPI's communicators: Debian's PETSc is
    // built with Open MPI (pkg-config `mpi`), headers and library both.
    let mpi = pkg_config::Config::new()
        .probe("mpi")
        .or_else(|_| pkg_config::Config::new().probe("ompi-c"))
        .unwrap_or_else(|e| {
            panic!("feature `petsc`: MPI's headers (libopenmpi-dev) not found: {e}")
        });
    let mut build = cc::Build::new();
    build.file("csrc/petsc_shim.c").warnings(true);
    for dir in lib.include_paths.iter().chain(&mpi.include_paths) {
        build.include(dir);
    }
    build.compile("op2la_petsc_shim");
}
