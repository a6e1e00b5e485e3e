//! `weft`: list, inspect, echo, publish, benchmark and clean weft's shared-memory objects on
//! this machine.
//!
//! Every subcommand prints tables for people (colour only on a terminal, never with
//! `NO_COLOR`) and JSON with `--json`; the exit status says what happened (see [`exit`]).
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]

mod bench;
#[cfg(feature = "bridge")]
mod bridge;
mod clean;
mod cli;
mod deadline;
mod echo;
mod exit;
mod info;
mod interrupt;
mod ls;
mod out;
mod publish;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    let done = match cli.command {
        Command::Ls(_) => ls::run(json),
        Command::Info(args) => info::run(&args, json),
        Command::Echo(args) => echo::run(&args, json),
        Command::Pub(args) => publish::run(&args, json),
        Command::Bench(args) => bench::run(&args, json),
        Command::Clean(args) => clean::run(&args, json),
        #[cfg(feature = "bridge")]
        Command::Bridge(args) => bridge::run(&args, json),
        Command::BenchChild(args) => bench::child(&args),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(json),
    }
}
