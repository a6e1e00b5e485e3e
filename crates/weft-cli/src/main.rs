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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(e),
    };
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

/// clap's own usage errors. With `--json` among the arguments (which clap could not finish
/// reading into `Cli::json`) they are the `{"error": ...}` document of every other failure,
/// status 2, so that a script reading JSON errors gets one; without, clap prints them. Help and
/// the version are not errors: clap prints them either way.
fn parse_failure(e: clap::Error) -> ExitCode {
    // Arguments after `--` are values (`weft pub r/t -- --json` publishes "--json").
    let json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if !e.use_stderr() || !json {
        e.exit();
    }
    // The first paragraph of clap's text ("error: invalid value '1h' for '--timeout
    // <TIMEOUT>': ..."), without its prefix, on one line; the tips and usage that follow are
    // for a reader of the terminal.
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or_default();
    let first = first.trim().strip_prefix("error:").unwrap_or(first);
    let message: Vec<&str> = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    exit::Failure::usage(message.join(" ")).report(true)
}
