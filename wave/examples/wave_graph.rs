//! Prints the pending graph of one step of the wave example as Graphviz dot (`cargo run
//! --example wave_graph [-- --opts none] | dot -Tsvg > step.svg`), after a first step that ran:
//! the graph a step records in the steady state.

use op2::LazyOptions;
use wave::Wave;

fn main() -> op2::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut opts = LazyOptions::NONE;
    let mut n = 4;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--opts" => {
                opts = args.next().unwrap_or_default().parse()?;
            }
            "--n" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(4),
            _ => {}
        }
    }
    #[cfg(feature = "mpi")]
    let mpi = op2::mpi::launched_by_mpirun()
        .then(op2::mpi::Mpi::init)
        .transpose()
        .map_err(|e| op2::Op2Error::Communication {
            reason: e.to_string(),
        })?;
    #[allow(unused_mut)]
    let mut b = op2::builder().lazy_optimisations(opts);
    #[cfg(feature = "mpi")]
    if let Some(m) = &mpi {
        b = b.communicator(m.world());
    }
    let rt = b.build()?;
    let w = Wave::new(&rt, n)?;
    w.step()?;
    rt.flush()?;
    w.step()?;
    if rt.communicator().rank() == 0 {
        print!("{}", rt.pending_graph().to_dot());
    }
    Ok(())
}
