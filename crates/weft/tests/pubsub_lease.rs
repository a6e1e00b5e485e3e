//! Single-publisher leases across a takeover of a stopped holder's row (pid namespaces: the
//! holder is judged by its heartbeat, so a stopped one looks dead and resumes later).

mod common;

use common::{Cleanup, pid_namespaces_available, spawn_in_pid_namespace, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};

/// The pid (in our namespace) of the peer that `unshare --fork` started.
fn unshare_child(unshare: u32) -> i32 {
    for _ in 0..500 {
        let s = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
            .unwrap_or_default();
        if let Some(p) = s.split_whitespace().next() {
            return p.parse().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no child of unshare");
}

fn signal(pid: i32, sig: &str) {
    assert!(
        std::process::Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// A single publisher in another pid namespace (judged by its heartbeat) is stopped past the
/// liveness timeout. A new publisher opens the region: its join takes the stopped holder's row
/// (the first row not alive), recovers it (clearing the lease), and registers the topic as its
/// single publisher. The lease word used to hold the row + 1 only, the same value as before:
/// the resumed holder passed its check and wrote beside the new holder. The word carries the
/// claim's epoch too: the resumed holder gets `InUse` and writes nothing, in every mode.
#[test]
fn a_resumed_holder_whose_row_was_taken_does_not_publish_beside_the_new_holder() {
    if !pid_namespaces_available() {
        eprintln!("not run: this process cannot create a pid namespace");
        return;
    }
    let mut wrong = Vec::new();
    for mode in ["blocks", "latest", "inline"] {
        let name = unique("rv-aba");
        let _c = Cleanup(name.clone());
        let go = format!("/tmp/{name}.go");
        let _ = std::fs::remove_file(&go);
        let creator = Publisher::create(&name, &Config::default()).unwrap();
        let mut a = spawn_in_pid_namespace(&["pubsub-solo", &name, "/solo", mode, &go]);
        a.expect("ready");
        let a_pid = unshare_child(a.child.id());
        // Stopped: its heartbeat goes stale.
        signal(a_pid, "-STOP");
        std::thread::sleep(Duration::from_millis(1500));
        let cfg = Config::default().liveness_timeout(Duration::from_millis(300));
        let c = Publisher::open_with(&name, &cfg).unwrap();
        let spec = match mode {
            "latest" => TopicSpec::new(TopicMode::Latest),
            "inline" => TopicSpec::inline(8),
            _ => TopicSpec::new(TopicMode::Blocks),
        }
        .single_publisher();
        let t = c
            .register_spec("/solo", &spec)
            .expect("the stopped holder was judged dead: the lease is taken over");
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/solo").unwrap();
        let seq_c = c.publish(&t, &[3u8; 8]).unwrap();
        // The old holder resumes and publishes.
        signal(a_pid, "-CONT");
        std::fs::write(&go, b"").unwrap();
        let said = a.line();
        let _ = std::fs::remove_file(&go);
        let seq_c2 = c.publish(&t, &[4u8; 8]).unwrap();
        let mut got = Vec::new();
        while let Ok(m) = sub.try_recv() {
            got.push((m.seq(), m[0]));
        }
        // Only the new holder's messages (a latest topic: its newest).
        assert!(
            got.iter().all(|&(_, v)| v == 3 || v == 4),
            "{mode}: {got:?}"
        );
        assert_eq!(got.last(), Some(&(seq_c2, 4)), "{mode}: {seq_c} {got:?}");
        if said != "error InUse" {
            wrong.push(format!("{mode}: {said}"));
        }
        drop(creator);
    }
    assert!(
        wrong.is_empty(),
        "the resumed holder published beside the new holder: {wrong:?}"
    );
}
