//! weft-bench: every scenario run against weft and the peers' own crates in one process run,
//! reported as medians and ratios (weft over peer; above 1.0 means weft is better).
//!
//! ```text
//! cargo run --release -p weft-bench -- [--filter SUBSTRING] [--reps N] [--json PATH]
//! ```
//! Cross-process scenarios re-run this binary as the child (`weft-bench child ...`).

mod channel;
// Shared machinery: not every area uses every helper.
#[allow(dead_code)]
mod harness;
mod pool;
mod pubsub;
mod ring;
mod stream;

use clap::Parser;
use harness::{Report, Scenario};

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "weft against its peers, one run, one report")]
struct Args {
    /// Run only scenarios whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Measured repetitions per implementation (after one warm-up).
    #[arg(long, default_value_t = 7)]
    reps: usize,
    /// Also write the report as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// List the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Internal: run as the child process of a cross-process scenario.
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    child: Option<Vec<String>>,
}

fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    all.extend(stream::scenarios());
    all.extend(ring::scenarios());
    all.extend(pool::scenarios());
    all.extend(channel::scenarios());
    all.extend(pubsub::scenarios());
    all
}

fn main() {
    let args = Args::parse();
    if let Some(child) = args.child {
        let code = stream::child(&child)
            .or_else(|| ring::child(&child))
            .or_else(|| pool::child(&child))
            .or_else(|| channel::child(&child))
            .or_else(|| pubsub::child(&child))
            .unwrap_or_else(|| {
                eprintln!("weft-bench: unknown child role {child:?}");
                2
            });
        std::process::exit(code);
    }
    let selected: Vec<Scenario> = scenarios()
        .into_iter()
        .filter(|s| args.filter.as_deref().is_none_or(|f| s.name.contains(f)))
        .collect();
    if args.list {
        for s in &selected {
            println!("{}", s.name);
        }
        return;
    }
    let mut report = Report::new(args.reps);
    eprintln!("{}", harness::machine_summary());
    for s in &selected {
        eprintln!("== {}", s.name);
        (s.run)(&mut report);
    }
    print!("{}", report.markdown());
    if let Some(path) = args.json {
        std::fs::write(&path, report.json()).expect("write the JSON report");
    }
}
