//! `weft clean`: reclaims what dead processes held in regions that live on, and removes objects
//! in which nobody is alive (`ObjectInfo::is_abandoned`). A live participant's object is never
//! removed; a stream whose writer closed before any reader came, keeping records for a reader
//! yet to come, is kept (a dead writer's is not); an object that is not weft's, that fails
//! validation, or that is not ready (its creator may be at work) is never touched, and
//! reported as skipped.

use crate::cli::CleanArgs;
use crate::exit::{ERROR, Failure, Outcome, from_io};
use crate::out::{self, BAD, DIM, GOOD, Table, WARN, cell};
use serde::Serialize;
use std::io::Write;
use weft::Error;
use weft::shm::{ObjectInfo, ObjectKind};

/// One thing `weft clean` did (or, with --dry-run, would do).
#[derive(Debug, Serialize)]
struct Action {
    name: String,
    kind: Option<&'static str>,
    /// `remove`, `reclaim`, `skip` (an object it will not touch) or `fail`; done unless the
    /// report says `dry_run`.
    action: &'static str,
    /// Why, in words.
    detail: String,
    /// Block references released (reclaims only).
    #[serde(skip_serializing_if = "Option::is_none")]
    released: Option<u64>,
}

/// The JSON document of `weft clean`.
#[derive(Debug, Serialize)]
struct Report {
    dry_run: bool,
    /// Objects removed (or that would be).
    removed: usize,
    /// Regions whose dead participants were reclaimed (or would be).
    reclaimed: usize,
    /// Block references released by the reclaims.
    released: u64,
    actions: Vec<Action>,
}

/// Runs `weft clean`.
pub fn run(args: &CleanArgs, json: bool) -> Outcome {
    let dry = args.dry_run;
    let mut report = Report {
        dry_run: dry,
        removed: 0,
        reclaimed: 0,
        released: 0,
        actions: Vec::new(),
    };
    let objects = if args.names.is_empty() {
        weft::shm::objects()
    } else {
        // Every name is checked before anything is touched.
        args.names
            .iter()
            .map(|n| weft::shm::object(n))
            .collect::<Result<Vec<_>, _>>()?
    };
    for o in objects {
        if let Some(a) = clean_one(&o, dry) {
            match a.action {
                "remove" => report.removed += 1,
                "reclaim" => {
                    report.reclaimed += 1;
                    report.released += a.released.unwrap_or(0);
                }
                _ => {}
            }
            report.actions.push(a);
        }
    }
    let failed = report.actions.iter().filter(|a| a.action == "fail").count();
    if json {
        out::json(&report)?;
    } else {
        print_human(&report).map_err(from_io)?;
    }
    if failed > 0 {
        return Err(Failure::new(
            ERROR,
            format!("{failed} object(s) could not be cleaned"),
        ));
    }
    Ok(())
}

fn action(o: &ObjectInfo, action: &'static str, detail: String) -> Action {
    Action {
        name: o.name.clone(),
        kind: o.kind.map(|k| k.name()),
        action,
        detail,
        released: None,
    }
}

fn clean_one(o: &ObjectInfo, dry: bool) -> Option<Action> {
    if o.is_abandoned() {
        let why = match &o.error {
            Some(_) => format!(
                "its creator (process {}) died before finishing it",
                o.creator_pid
            ),
            None => {
                let mut pids: Vec<u32> = o
                    .peers
                    .iter()
                    .filter(|p| p.state == weft::shm::PeerState::Dead)
                    .map(|p| p.pid)
                    .collect();
                pids.sort_unstable();
                pids.dedup();
                let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
                if pids.is_empty() {
                    "nobody is alive: every participant left without removing it".to_string()
                } else {
                    format!("nobody is alive; died: process {}", pids.join(", "))
                }
            }
        };
        if dry {
            return Some(action(o, "remove", why));
        }
        return Some(match weft::shm::remove_abandoned(&o.name) {
            Ok(true) => action(o, "remove", why),
            // A participant came back, or someone else removed it first: nothing to do.
            Ok(false) | Err(Error::NotFound { .. }) => return None,
            Err(e) => action(o, "fail", e.to_string()),
        });
    }
    match &o.error {
        None => {}
        Some(e @ Error::NotReady { pid, .. }) => {
            // Not abandoned: its creator is not known to be gone (alive, in another pid
            // namespace, or not named at all).
            let why = if *pid == 0 {
                "not ready: its header names no creator (an empty or zero-filled file), so \
                 whether one is still at work cannot be told; a creator of the same name \
                 replaces it"
                    .to_string()
            } else {
                format!("not ready: {e}; its creator may still be making it")
            };
            return Some(action(o, "skip", why));
        }
        Some(e) => return Some(action(o, "skip", format!("left alone: {e}"))),
    }
    if o.kind == Some(ObjectKind::Region) && o.dead() > 0 {
        let why = format!(
            "{} dead participant(s) beside {} live one(s)",
            o.dead(),
            o.alive()
        );
        if dry {
            return Some(action(o, "reclaim", why));
        }
        return Some(match weft::pubsub::reclaim(&o.name) {
            Ok(n) => Action {
                released: Some(n),
                detail: format!("{why}: {n} block reference(s) released"),
                ..action(o, "reclaim", String::new())
            },
            Err(Error::NotFound { .. }) => return None,
            Err(e) => action(o, "fail", e.to_string()),
        });
    }
    None
}

fn print_human(r: &Report) -> std::io::Result<()> {
    let mut w = out::stdout();
    if r.actions.is_empty() {
        return writeln!(w, "nothing to clean");
    }
    let mut t = Table::new(&["ACTION", "KIND", "NAME", "WHY"]);
    for a in &r.actions {
        let (word, style) = match (a.action, r.dry_run) {
            ("remove", false) => ("removed", BAD),
            ("remove", true) => ("would remove", BAD),
            ("reclaim", false) => ("reclaimed", GOOD),
            ("reclaim", true) => ("would reclaim", GOOD),
            ("fail", _) => ("failed", BAD),
            _ => ("skipped", WARN),
        };
        t.row(vec![
            cell(word).styled(style),
            cell(a.kind.unwrap_or("?")),
            cell(&a.name).styled(out::NAME),
            cell(&a.detail),
        ]);
    }
    t.print(&mut w)?;
    if r.dry_run {
        writeln!(w, "\n{DIM}dry run: nothing was changed{DIM:#}")?;
    }
    Ok(())
}
