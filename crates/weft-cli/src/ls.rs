//! `weft ls`: every weft object on this machine.

use crate::exit::{Outcome, from_io};
use crate::out::{self, BAD, DIM, GOOD, Table, WARN, cell};
use serde::Serialize;
use std::io::Write;
use weft::Error;
use weft::shm::{ObjectInfo, Peer};

/// One participant, as printed in JSON.
#[derive(Debug, Serialize)]
pub struct PeerView {
    /// Row index in its object.
    pub index: u32,
    /// `writer`, `reader`, `publisher`, `subscriber`, `server`, `client`, or null.
    pub role: Option<String>,
    /// Process id (0: never claimed).
    pub pid: u32,
    /// `alive`, `dead`, `closed` or `absent`.
    pub state: &'static str,
}

impl From<&Peer> for PeerView {
    fn from(p: &Peer) -> PeerView {
        PeerView {
            index: p.index,
            role: p.role.map(|r| r.to_string()),
            pid: p.pid,
            state: p.state.name(),
        }
    }
}

/// One object, as printed in JSON.
#[derive(Debug, Serialize)]
pub struct ObjectView {
    /// The name (the file is /dev/shm/weft.NAME).
    pub name: String,
    /// `region`, `stream`, `server`, or null when the header could not be read.
    pub kind: Option<&'static str>,
    /// Bytes in the file.
    pub size: u64,
    /// The creating process.
    pub creator_pid: u32,
    /// Whether it still runs.
    pub creator_alive: bool,
    /// Creation time, ns since the Unix epoch (0: unknown).
    pub created_unix_ns: u64,
    /// Participants alive.
    pub alive: usize,
    /// Participants that died without letting go.
    pub dead: usize,
    /// `ok`, `abandoned` (nobody alive in it: `weft clean` removes it), `not-ready` or
    /// `unusable`.
    pub status: &'static str,
    /// Why the object cannot be used, when it cannot.
    pub error: Option<String>,
    /// Every participant row ever claimed.
    pub participants: Vec<PeerView>,
}

/// The status word of an object.
pub fn status(o: &ObjectInfo) -> &'static str {
    match &o.error {
        _ if o.is_abandoned() => "abandoned",
        None => "ok",
        Some(Error::NotReady { .. }) => "not-ready",
        Some(_) => "unusable",
    }
}

impl From<&ObjectInfo> for ObjectView {
    fn from(o: &ObjectInfo) -> ObjectView {
        ObjectView {
            name: o.name.clone(),
            kind: o.kind.map(|k| k.name()),
            size: o.size,
            creator_pid: o.creator_pid,
            creator_alive: o.creator_alive,
            created_unix_ns: o.created_unix_ns,
            alive: o.alive(),
            dead: o.dead(),
            status: status(o),
            error: o.error.as_ref().map(|e| e.to_string()),
            participants: o.peers.iter().map(PeerView::from).collect(),
        }
    }
}

/// The JSON document of `weft ls`.
#[derive(Debug, Serialize)]
struct Listing {
    objects: Vec<ObjectView>,
}

/// Runs `weft ls`.
pub fn run(json: bool) -> Outcome {
    let objects = weft::shm::objects();
    if json {
        return out::json(&Listing {
            objects: objects.iter().map(ObjectView::from).collect(),
        });
    }
    print_human(&objects).map_err(from_io)
}

fn print_human(objects: &[ObjectInfo]) -> std::io::Result<()> {
    let mut w = out::stdout();
    if objects.is_empty() {
        return writeln!(w, "no weft objects on this machine");
    }
    let mut t = Table::new(&[
        "KIND", "NAME", ">SIZE", ">CREATOR", ">ALIVE", ">DEAD", "STATUS", "CREATED",
    ]);
    for o in objects {
        let status = status(o);
        let status_cell = match status {
            "ok" => cell(status).styled(GOOD),
            "abandoned" => cell(status).styled(BAD),
            _ => cell(status).styled(WARN),
        };
        let creator = if o.creator_pid == 0 {
            cell("-")
        } else if o.creator_alive {
            cell(o.creator_pid)
        } else {
            cell(format!("{} (exited)", o.creator_pid)).styled(DIM)
        };
        let dead = o.dead();
        t.row(vec![
            cell(o.kind.map_or("?", |k| k.name())),
            cell(&o.name).styled(out::NAME),
            cell(out::bytes(o.size)),
            creator,
            cell(o.alive()),
            if dead > 0 {
                cell(dead).styled(BAD)
            } else {
                cell(dead)
            },
            status_cell,
            cell(out::ago(o.created_unix_ns)).styled(DIM),
        ]);
    }
    t.print(&mut w)?;
    let troubled: Vec<&ObjectInfo> = objects.iter().filter(|o| o.error.is_some()).collect();
    if !troubled.is_empty() {
        writeln!(w)?;
    }
    for o in troubled {
        if let Some(e) = &o.error {
            writeln!(w, "{WARN}{}{WARN:#}: {e}", o.name)?;
        }
    }
    let abandoned = objects.iter().filter(|o| o.is_abandoned()).count();
    if abandoned > 0 {
        writeln!(
            w,
            "\n{abandoned} abandoned (nobody alive in it): `weft clean` removes {}",
            if abandoned == 1 { "it" } else { "them" }
        )?;
    }
    Ok(())
}
