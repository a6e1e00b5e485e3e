//! The default origin tells hosts apart even when they have the same hostname and region name
//! (cloned machines: `raspberrypi`, region `robot`), while two bridges of one region on one
//! host still recognise each other's samples as looped.
//!
//! The second host is a bridge in a child process with a mount namespace of its own: its own
//! /dev/shm (so its region of the same name is another region) and its own /etc/machine-id,
//! with the same hostname. Needs CAP_SYS_ADMIN (`unshare --mount`, `mount`); without it the
//! test says why and passes without running.

mod common;

use common::{ChildBridge, Cleanup, config, eventually, free_port, unique};
use std::process::Command;
use std::time::Duration;
use weft::pubsub::{Config, Publisher};
use weft_zenoh::Bridge;

/// The shell run by `unshare`: a private /dev/shm and another machine id, then the fixture
/// (`$2`, with its configuration `$3`).
const OTHER_HOST: &str = "mount -t tmpfs tmpfs /dev/shm && mount --bind \"$1\" /etc/machine-id \
                          && exec \"$2\" \"$3\"";

/// A file removed when dropped.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn can_unshare() -> Result<(), String> {
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs tmpfs /dev/shm && test -r /etc/machine-id")
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

#[test]
fn same_hostname_and_region_on_two_hosts_is_not_a_loop() {
    if let Err(why) = can_unshare() {
        eprintln!("skipped: cannot make a mount namespace with its own /dev/shm here ({why})");
        return;
    }
    let region = unique("origin");
    let _clean = Cleanup(vec![region.clone()]);
    let prefix = unique("origin");
    let port = free_port();
    let machine_id = TempFile(std::env::temp_dir().join(format!("{}.machine-id", unique("id"))));
    std::fs::write(&machine_id.0, "0123456789abcdef0123456789abcdef\n").unwrap();

    // This host: the region, a publisher and its sending bridge (the default origin).
    let publisher = Publisher::create(&region, &Config::default()).unwrap();
    let topic = publisher.register("/p/x").unwrap();
    let sender = Bridge::start(
        config(&region, &prefix)
            .outbound("/p/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    // The other host: a region of the same name, and a receiving bridge (the default origin).
    let receiving = config(&region, &prefix)
        .inbound("/p/**")
        .unwrap()
        .connect(&format!("tcp/127.0.0.1:{port}"));
    let machine_id_path = machine_id.0.to_str().unwrap();
    let mut other = ChildBridge::spawn_in(
        &receiving,
        &[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            OTHER_HOST,
            "sh",
            machine_id_path,
        ],
    );
    // A second bridge of the same region on this host: its samples come back to where they
    // were published, and are dropped as looped.
    let same_host = Bridge::start(receiving.clone()).unwrap();
    assert!(sender.wait_matched("/p/x", Duration::from_secs(20)));

    let in_of = |stats: &serde_json::Value, field: &str| {
        stats["inbound"]
            .as_array()
            .and_then(|l| l.iter().find(|t| t["topic"] == "/p/x"))
            .map_or(0, |t| t[field].as_u64().unwrap())
    };
    let mut i = 0u64;
    eventually(
        Duration::from_secs(20),
        "a sample on the other host",
        || {
            publisher.publish(&topic, &i.to_le_bytes()).unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(10));
            let stats = other.stats();
            assert_eq!(
                in_of(&stats, "looped"),
                0,
                "the other host dropped: {stats}"
            );
            in_of(&stats, "samples") > 0
        },
    );
    eventually(
        Duration::from_secs(20),
        "a looped sample on this host",
        || {
            publisher.publish(&topic, &i.to_le_bytes()).unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(10));
            same_host
                .stats()
                .inbound("/p/x")
                .is_some_and(|t| t.looped > 0)
        },
    );
    let stats = same_host.stats();
    assert_eq!(common::inbound_of(&stats, "/p/x").samples, 0, "{stats}");
}
