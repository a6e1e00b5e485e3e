//! `weft info`: a region's topics, participants and pool; one topic; a stream's fill level and
//! peers; a server's slots; and the exit statuses of bad names and missing objects.

mod common;

use common::*;

#[test]
fn info_region_reports_topics_participants_holdings_and_pool() {
    let region = unique("info-r");
    let _c = Cleanup(vec![region.clone()]);
    let publisher = Proc::peer(&["region", &region, "/prices/AAPL", "5", "0"]);
    let subscriber = Proc::peer(&["subscriber", &region, "/prices/AAPL", "3"]);

    let doc = weft_json(&["info", &region]);
    assert_eq!(doc["name"], region);
    assert_eq!(doc["kind"], "region");
    assert_eq!(doc["creator_pid"], publisher.pid());
    let r = &doc["region"];
    assert_eq!(r["blocks"], 1024);
    assert_eq!(r["block_size"], 4096);
    // Five published messages: each ring slot keeps its block; the subscriber's three samples
    // are references to three of those blocks, not blocks of their own.
    assert_eq!(r["free_blocks"], 1024 - 5);
    // No publish displaced a block yet (the ring has more slots than messages).
    assert_eq!(r["kept_blocks"], 0);
    assert_eq!(r["participants_alive"], 2);
    let t = &r["topics"][0];
    assert_eq!(t["name"], "/prices/AAPL");
    assert_eq!(t["mode"], "blocks");
    assert_eq!(t["type_name"], serde_json::Value::Null);
    assert_eq!(t["max_len"], 4096);
    assert_eq!(t["published"], 5);
    // The five blocks the ring holds are the pool's whole use (1024 - free).
    assert_eq!(t["pool_blocks"], 5);
    assert_eq!(t["subscribers"], 1);
    assert_eq!(t["lagged"], 0);
    let parts = r["participants"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    let sub = parts.iter().find(|p| p["role"] == "subscriber").unwrap();
    assert_eq!(sub["pid"], subscriber.pid());
    assert_eq!(sub["state"], "alive");
    assert_eq!(sub["held"], 3);
    let publ = parts.iter().find(|p| p["role"] == "publisher").unwrap();
    assert_eq!(
        (&publ["pid"], &publ["held"]),
        (&publisher.pid().into(), &0.into())
    );

    let human = weft(&["info", &region]);
    assert_eq!(human.code, 0);
    for want in [
        "/prices/AAPL",
        "subscriber",
        "1024 blocks of 4.0 KiB",
        "5 in use",
        "0 kept by publishers",
    ] {
        assert!(human.stdout.contains(want), "{want:?} in\n{}", human.stdout);
    }
}

#[test]
fn info_region_slash_topic_shows_one_topic() {
    let region = unique("info-t");
    let _c = Cleanup(vec![region.clone()]);
    let _p = Proc::peer(&["region", &region, "/a/b", "7", "0"]);
    let doc = weft_json(&["info", &format!("{region}/a/b")]);
    assert_eq!(doc["region"], region);
    assert_eq!(doc["name"], "/a/b");
    assert_eq!(doc["published"], 7);

    let missing = weft(&["info", &format!("{region}/a/c")]);
    assert_eq!(missing.code, 3, "{missing:?}");
    assert!(
        missing.stderr.contains("has no topic '/a/c'"),
        "{}",
        missing.stderr
    );
    assert!(
        missing.stderr.contains("it has /a/b"),
        "the topics it has are named"
    );
}

#[test]
fn info_tells_latest_and_single_publisher_topics_apart() {
    let region = unique("info-i");
    let _c = Cleanup(vec![region.clone()]);
    let _p = Proc::peer(&["region", &region, "/blocks", "1", "0", "inline"]);
    let doc = weft_json(&["info", &region]);
    let topics = doc["region"]["topics"].as_array().unwrap();
    let find = |name: &str| {
        topics
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {topics:?}"))
    };
    // (topic, latest, single publisher): each is an inline topic of 8 bytes.
    for (name, latest, single) in [
        ("/inline/plain", false, false),
        ("/inline/latest", true, false),
        ("/inline/latest-single", true, true),
    ] {
        let t = find(name);
        assert_eq!(
            (
                &t["mode"],
                &t["latest"],
                &t["single_publisher"],
                &t["max_len"]
            ),
            (&"inline".into(), &latest.into(), &single.into(), &8.into()),
            "{name}"
        );
        assert_eq!(t["published"], 1, "{name}");
    }
    let b = find("/blocks");
    assert_eq!(
        (&b["mode"], &b["latest"], &b["single_publisher"]),
        (&"blocks".into(), &false.into(), &false.into())
    );
    let b = find("/blocks-single");
    assert_eq!(
        (&b["mode"], &b["latest"], &b["single_publisher"]),
        (&"blocks".into(), &false.into(), &true.into())
    );

    // One topic, as JSON and as the table.
    let one = weft_json(&["info", &format!("{region}/inline/latest-single")]);
    assert_eq!(
        (&one["latest"], &one["single_publisher"]),
        (&true.into(), &true.into())
    );
    let human = weft(&["info", &region]);
    assert_eq!(human.code, 0);
    let line = |name: &str| {
        human
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} in\n{}", human.stdout))
            .to_string()
    };
    assert!(line("/inline/latest-single").contains("inline latest single"));
    assert!(line("/inline/latest").contains("inline latest"));
    assert!(!line("/inline/latest").contains("single"));
    assert!(!line("/inline/plain").contains("latest"));
    assert!(line("/blocks-single").contains("blocks single"));
    assert!(!line("/blocks").contains("single"));
}

#[test]
fn info_stream_reports_fill_level_and_both_peers() {
    let stream = unique("info-s");
    let _c = Cleanup(vec![stream.clone()]);
    let writer = Proc::peer(&["stream", &stream, "65536", "20"]);
    let doc = weft_json(&["info", &stream]);
    let s = &doc["stream"];
    assert_eq!(s["capacity"], 65536);
    assert_eq!(s["align"], 8);
    // 20 records of 100 bytes: 8-byte header + payload padded to 104.
    assert_eq!(s["used"], 20 * (8 + 104));
    assert_eq!(s["writer"]["pid"], writer.pid());
    assert_eq!(s["writer"]["state"], "alive");
    assert_eq!(s["reader"]["state"], "absent");

    let mut reader = Proc::peer(&["stream-reader", &stream]);
    let doc = weft_json(&["info", &stream]);
    assert_eq!(doc["stream"]["reader"]["pid"], reader.pid());
    assert_eq!(doc["stream"]["reader"]["state"], "alive");
    reader.kill9();
    let doc = weft_json(&["info", &stream]);
    assert_eq!(doc["stream"]["reader"]["state"], "dead");
    assert_eq!(doc["dead"], 1);

    let human = weft(&["info", &stream]);
    assert!(
        human.stdout.contains("2.2 KiB of 64.0 KiB"),
        "{}",
        human.stdout
    );
}

#[test]
fn info_server_reports_its_slots() {
    let server = unique("info-v");
    let _c = Cleanup(vec![server.clone()]);
    let v = Proc::peer(&["server", &server]);
    let doc = weft_json(&["info", &server]);
    assert_eq!(doc["server"]["slots"], 64);
    assert_eq!(doc["server"]["server"]["pid"], v.pid());
    assert_eq!(doc["server"]["clients"].as_array().unwrap().len(), 0);
}

#[test]
fn missing_objects_and_bad_names_have_their_exit_statuses() {
    let gone = unique("info-none");
    let r = weft(&["info", &gone]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.contains(&format!("no weft object named '{gone}'")),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());

    for bad in ["bad name", ".hidden", "a..b", &"x".repeat(201)] {
        let r = weft(&["info", bad]);
        assert_eq!(r.code, 2, "{bad:?}: {r:?}");
        assert!(r.stderr.contains("invalid name"), "{}", r.stderr);
    }
    let r = weft(&["info", "region/not a topic"]);
    assert_eq!(r.code, 2, "{r:?}");

    // A region still being made: one of its topics is reported as the region is, at once
    // (REGION/TOPIC once waited the library's 1 s for the creator, and said less).
    let made = unique("info-being-made");
    let _c = Cleanup(vec![made.clone()]);
    region_being_made(&made, std::process::id());
    let region = weft(&["info", &made]);
    assert_eq!(region.code, 5, "{region:?}");
    assert!(
        region.stderr.contains("cannot be read"),
        "{}",
        region.stderr
    );
    let topic = weft(&["info", &format!("{made}/t")]);
    assert_eq!(
        (topic.code, &topic.stderr),
        (region.code, &region.stderr),
        "{topic:?}"
    );

    // --json errors are JSON on stderr, with the same status.
    let r = weft(&["info", &gone, "--json"]);
    assert_eq!(r.code, 3);
    let e: serde_json::Value = serde_json::from_str(&r.stderr).expect("a JSON error");
    assert_eq!(e["error"]["code"], 3);
    assert!(e["error"]["message"].as_str().unwrap().contains(&gone));
}

/// Whether this process runs as root (the first field of /proc/self/status's `Uid:` line).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A file the OS does not let `weft` open is the OS refusing (status 1), not an unusable
/// object (5): the file may be fine.
#[test]
fn info_on_a_file_the_os_refuses_exits_1() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let name = unique("info-denied");
    let _c = Cleanup(vec![name.clone()]);
    std::fs::write(shm_path(&name), vec![0u8; 4096]).unwrap();
    std::fs::set_permissions(shm_path(&name), std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = std::process::Command::new(WEFT);
    cmd.args(["info", &name]);
    if is_root() {
        // Root opens any file: ask as nobody.
        cmd.uid(65534).gid(65534);
    }
    let r: Run = cmd.output().expect("run weft").into();
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains(&name), "{}", r.stderr);
}

/// A missing topic's error names the region's topics, but not hundreds of them on one line.
#[test]
fn info_missing_topic_names_at_most_ten_topics() {
    let region = unique("info-many");
    let _c = Cleanup(vec![region.clone()]);
    let _p = Proc::peer(&["topics", &region, "15"]);
    let r = weft(&["info", &format!("{region}/nope")]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("/t/00, /t/01"), "{}", r.stderr);
    assert!(r.stderr.contains("/t/09"), "{}", r.stderr);
    assert!(!r.stderr.contains("/t/10"), "{}", r.stderr);
    assert!(r.stderr.contains("and 5 more"), "{}", r.stderr);
    let few = weft(&["echo", &format!("{region}/nope"), "--timeout", "1"]);
    assert!(
        few.stderr.contains("and 5 more"),
        "echo too: {}",
        few.stderr
    );
}

/// A typed topic's type name is 1 to 64 arbitrary bytes that any process may register: `info`
/// shows it escaped as `echo --format text` shows payloads (\xNN), so that it cannot write
/// escape sequences or line breaks into the terminal of whoever looks; JSON carries it as is.
#[test]
fn info_escapes_control_characters_of_a_type_name() {
    let region = unique("info-esc");
    let _c = Cleanup(vec![region.clone()]);
    let evil = "\x1b]0;owned\x07\x1b[2J\r\nX";
    let p = weft::pubsub::Publisher::create(&region, &weft::pubsub::Config::default()).unwrap();
    let _t = p.register_typed_named::<u64>("/t", evil).unwrap();
    for env in [&[][..], &[("CLICOLOR_FORCE", "1")][..]] {
        for arg in [region.clone(), format!("{region}/t")] {
            let r = weft_env(&["info", &arg], env);
            assert_eq!(r.code, 0, "{r:?}");
            assert!(!r.stdout.contains('\r'), "{env:?} {arg}: {:?}", r.stdout);
            assert!(!r.stdout.contains('\x07'), "{env:?} {arg}: {:?}", r.stdout);
            assert!(
                !r.stdout.contains("\x1b]0;"),
                "{env:?} {arg}: {:?}",
                r.stdout
            );
            assert!(
                !r.stdout.contains("\x1b[2J"),
                "{env:?} {arg}: {:?}",
                r.stdout
            );
            assert!(
                r.stdout
                    .contains("\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0aX (8 B)"),
                "{env:?} {arg}: {:?}",
                r.stdout
            );
        }
    }
    let doc = weft_json(&["info", &format!("{region}/t")]);
    assert_eq!(doc["type_name"], evil);
}

/// A topic unregistered while a subscription keeps it stays in its entry, closed, and a
/// registration of the same name takes another entry: `weft info REGION` lists both, the old
/// one marked unregistered, and `weft info REGION/TOPIC` shows the registered one (it showed
/// whichever entry came first, here the old one's figures).
#[test]
fn info_tells_an_unregistered_topic_from_its_new_registration() {
    use weft::pubsub::{Config, Publisher, Subscriber};
    let region = unique("info-rereg");
    let _c = Cleanup(vec![region.clone()]);
    let p = Publisher::create(&region, &Config::default()).unwrap();
    let old = p.register("/t").unwrap();
    let s = Subscriber::connect(&region).unwrap();
    let _keeps_old = s.subscribe("/t").unwrap();
    for _ in 0..3 {
        p.publish(&old, b"old").unwrap();
    }
    p.unregister(&old).unwrap();
    let new = p.register("/t").unwrap();
    for _ in 0..10 {
        p.publish(&new, b"new").unwrap();
    }

    let doc = weft_json(&["info", &format!("{region}/t")]);
    assert_eq!(doc["published"], 10, "{doc:#}");
    assert_eq!(doc["registered"], true);
    let doc = weft_json(&["info", &region]);
    let rows: Vec<(bool, u64)> = doc["region"]["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "/t")
        .map(|t| {
            (
                t["registered"].as_bool().unwrap(),
                t["published"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{doc:#}");
    assert!(
        rows.contains(&(true, 10)) && rows.contains(&(false, 3)),
        "{rows:?}"
    );
    let human = weft(&["info", &region]);
    assert_eq!(human.code, 0);
    assert_eq!(
        human.stdout.matches("(unregistered)").count(),
        1,
        "{}",
        human.stdout
    );
}

/// The human heading counts the topics the region has, out of how many it can hold.
#[test]
fn info_region_counts_its_topics_out_of_its_capacity() {
    let region = unique("info-topics");
    let _c = Cleanup(vec![region.clone()]);
    let _p = Proc::peer(&["region", &region, "/only", "1", "0"]);
    let doc = weft_json(&["info", &region]);
    let cap = doc["region"]["topic_capacity"].as_u64().unwrap();
    assert!(cap > 1, "{doc}");
    assert_eq!(doc["region"]["topics"].as_array().unwrap().len(), 1);
    let human = weft(&["info", &region]);
    assert_eq!(human.code, 0, "{human:?}");
    let line = human
        .stdout
        .lines()
        .find(|l| l.starts_with("topics "))
        .unwrap_or_else(|| panic!("no topics line in\n{}", human.stdout));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words[..4],
        ["topics", "1", "of", &format!("{cap},")[..]],
        "{line}"
    );
}

/// A server's clients are listed by slot, numbered from 0 (the server's own row is not a
/// slot).
#[test]
fn info_server_numbers_client_slots_from_zero() {
    let server = unique("info-v");
    let _c = Cleanup(vec![server.clone()]);
    let _v = Proc::peer(&["server", &server]);
    // The client's connect waits for an accept the fixture never gives; its slot is claimed
    // meanwhile, and it gives up on its own.
    let name = server.clone();
    let client = std::thread::spawn(move || {
        let _ = weft::channel::Server::connect(&name, std::time::Duration::from_secs(30));
    });
    let me = std::process::id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let row = loop {
        let human = weft(&["info", &server]);
        assert_eq!(human.code, 0, "{human:?}");
        if let Some(l) = human
            .stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(&me.to_string()[..]))
        {
            break l.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "this process never appeared as a client:\n{}",
            human.stdout
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let doc = weft_json(&["info", &server]);
    let clients = doc["server"]["clients"].as_array().unwrap();
    let mine = clients.iter().find(|c| c["pid"] == me).expect("listed");
    let slot = mine["index"].as_u64().unwrap() - 1;
    assert_eq!(
        row.split_whitespace().next(),
        Some(&slot.to_string()[..]),
        "{row}"
    );
    assert_eq!(slot, 0, "the first client takes slot 0: {row}");
    drop(client);
}
