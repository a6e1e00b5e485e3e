//! The sending bridge in another network namespace, joined to this one by a veth pair: its
//! only way to the receiving bridge is the veth link (its loopback is its own), while the
//! region it reads is the same shared memory. Needs CAP_NET_ADMIN (`ip netns`, `ip link`);
//! without it the test says why and passes without running.

mod common;

use common::{ChildBridge, Cleanup, check_payload, config, payload, unique};
use std::process::Command;
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::Bridge;

/// A network namespace with one end of a veth pair; the other end stays here. Removed when
/// dropped.
struct Netns {
    name: String,
    host_if: String,
    host_ip: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    fn create() -> Result<Netns, String> {
        let pid = std::process::id();
        // A /30 of 10.213.0.0/16 per process id, so parallel runs do not collide.
        let (hi, lo) = ((pid >> 6) & 0xff, (pid & 0x3f) * 4);
        let ns = Netns {
            name: format!("wz-test-{pid}"),
            host_if: format!("wz{pid}h"),
            host_ip: format!("10.213.{hi}.{}", lo + 1),
        };
        let peer_if = format!("wz{pid}n");
        let peer_ip = format!("10.213.{hi}.{}", lo + 2);
        ip(&["netns", "add", &ns.name])?;
        // From here on, Drop removes what exists.
        ip(&[
            "link",
            "add",
            &ns.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &peer_if,
        ])?;
        ip(&["link", "set", &peer_if, "netns", &ns.name])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/30", ns.host_ip),
            "dev",
            &ns.host_if,
        ])?;
        ip(&["link", "set", &ns.host_if, "up"])?;
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &ns.name, "ip"];
            all.extend_from_slice(args);
            ip(&all)
        };
        inside(&["addr", "add", &format!("{peer_ip}/30"), "dev", &peer_if])?;
        inside(&["link", "set", &peer_if, "up"])?;
        inside(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.host_if]);
        let _ = ip(&["netns", "del", &self.name]);
    }
}

#[test]
fn a_bridge_in_another_network_namespace() {
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("skipped: cannot make a network namespace here ({why})");
            return;
        }
    };
    let (a, b) = (unique("netns-a"), unique("netns-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("netns");
    let port = common::free_port();
    let shape = Config::default().ring_slots(2048).blocks(2048 + 256);
    let publisher = Publisher::create(&a, &shape).unwrap();
    let topic = publisher.register("/scan/front").unwrap();
    let local_b = Publisher::create(&b, &shape).unwrap();
    local_b.register("/scan/front").unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut sub = subscriber.subscribe("/scan/front").unwrap();

    // The receiver listens on the veth address only; the sender, inside the namespace,
    // reaches it through the veth link.
    let _receiver = Bridge::start(
        config(&b, &prefix)
            .inbound("/scan/**")
            .unwrap()
            .listen(&format!("tcp/{}:{port}", ns.host_ip)),
    )
    .unwrap();
    let sender_config = config(&a, &prefix)
        .outbound("/scan/**")
        .unwrap()
        .connect(&format!("tcp/{}:{port}", ns.host_ip));
    let mut sender = ChildBridge::spawn(&sender_config, Some(&ns.name));
    sender.expect("matched /scan/front", Duration::from_secs(20));

    // It really is in another network namespace.
    let here = std::fs::read_link("/proc/self/ns/net").unwrap();
    let there = std::fs::read_link(format!("/proc/{}/ns/net", sender.pid())).unwrap();
    assert_ne!(
        here, there,
        "the sending bridge shares this network namespace"
    );

    let n = 2000;
    for i in 0..n {
        publisher.publish(&topic, &payload(i)).unwrap();
        if i % 64 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for i in 0..n {
        let s = sub.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(check_payload(&s), i);
    }
}
