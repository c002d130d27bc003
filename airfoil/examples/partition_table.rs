//! The README's partition table: the Airfoil standard mesh split into 2, 4, 8, 16 and 64 parts by
//! each partitioner (no ranks needed), with the edge cut, every part's sections of cells and nodes
//! (largest over the parts) and the time taken.
//!
//! `cargo run --release -p airfoil --features mpi --example partition_table [-- --ij I J] [--shuffle]`
//! (`--shuffle`: the mesh numbered at random first, as an unordered mesh file would be).

use airfoil::distributed::{declare, shuffled};
use airfoil::{Mesh, STANDARD_IJ};
use op2::mpi::{Options, PartitionReport};

fn largest(report: &PartitionReport, set: &str, f: impl Fn(&op2::SetSizes) -> usize) -> usize {
    let (_, sizes) = report
        .sets
        .iter()
        .find(|(n, _)| n == set)
        .expect("declared");
    sizes.iter().map(f).max().unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ij = match args.iter().position(|a| a == "--ij") {
        Some(i) => (args[i + 1].parse()?, args[i + 2].parse()?),
        None => STANDARD_IJ,
    };
    let mut mesh = Mesh::generate(ij.0, ij.1);
    let shuffle = args.iter().any(|a| a == "--shuffle");
    if shuffle {
        mesh = shuffled(&mesh, 7);
    }
    let (builder, handles) = declare(&mesh)?;
    println!(
        "Airfoil {} x {}{}: {} cells, {} nodes, {} edges. Largest over the parts of each section; \
         halo = exec + non-exec.\n",
        ij.0,
        ij.1,
        if shuffle { ", numbered at random" } else { "" },
        mesh.ncell(),
        mesh.nnode(),
        mesh.nedge()
    );
    println!(
        "| parts | partitioner | edge cut | cells core | cells owned | cells exec | cells non-exec | nodes core | nodes owned | nodes exec | nodes non-exec | largest cell halo | time (s) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for parts in [2, 4, 8, 16, 64] {
        for p in handles.partitioners() {
            let r = builder.plan(parts, &Options::new(p))?;
            println!(
                "| {parts} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                r.partitioner,
                r.edge_cut,
                largest(&r, "cells", |s| s.core),
                largest(&r, "cells", |s| s.owned),
                largest(&r, "cells", |s| s.exec_halo),
                largest(&r, "cells", |s| s.nonexec_halo),
                largest(&r, "nodes", |s| s.core),
                largest(&r, "nodes", |s| s.owned),
                largest(&r, "nodes", |s| s.exec_halo),
                largest(&r, "nodes", |s| s.nonexec_halo),
                r.largest_halo("cells").unwrap_or(0),
                r.seconds
            );
        }
    }
    Ok(())
}
