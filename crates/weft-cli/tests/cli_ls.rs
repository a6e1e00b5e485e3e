//! `weft ls`: every kind of object with its creator and participants, alive and dead; colour
//! only where it belongs; foreign, truncated and corrupt files reported, never a crash.

mod common;

use common::*;

#[test]
fn ls_lists_regions_streams_and_servers_with_creator_and_participants() {
    let (region, stream, server) = (unique("ls-r"), unique("ls-s"), unique("ls-v"));
    let _c = Cleanup(vec![region.clone(), stream.clone(), server.clone()]);
    let r = Proc::peer(&["region", &region, "/prices/AAPL", "3", "0"]);
    let s = Proc::peer(&["stream", &stream, "65536", "20"]);
    let v = Proc::peer(&["server", &server]);

    let o = listed(&region).expect("the region is listed");
    assert_eq!(o["kind"], "region");
    assert_eq!(o["creator_pid"], r.pid());
    assert_eq!(o["creator_alive"], true);
    assert_eq!(
        (o["alive"].as_u64(), o["dead"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(o["status"], "ok");
    assert_eq!(o["error"], serde_json::Value::Null);
    let p = &o["participants"][0];
    assert_eq!(
        (&p["role"], &p["pid"], &p["state"]),
        (&"publisher".into(), &r.pid().into(), &"alive".into())
    );
    assert!(
        o["size"].as_u64().unwrap() > 4 << 20,
        "default region: 1024 blocks of 4 KiB"
    );
    assert!(o["created_unix_ns"].as_u64().unwrap() > 0);

    let o = listed(&stream).expect("the stream is listed");
    assert_eq!(o["kind"], "stream");
    assert_eq!(o["creator_pid"], s.pid());
    assert_eq!(o["size"], 4096 + 65536);
    assert_eq!(
        (o["alive"].as_u64(), o["dead"].as_u64()),
        (Some(1), Some(0))
    );
    let roles: Vec<_> = o["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["role"].clone())
        .collect();
    assert_eq!(
        roles,
        ["writer"],
        "the reader row was never claimed: left out"
    );

    let o = listed(&server).expect("the server is listed");
    assert_eq!(o["kind"], "server");
    assert_eq!(o["participants"][0]["role"], "server");
    assert_eq!(o["participants"][0]["pid"], v.pid());

    let human = weft(&["ls"]);
    assert_eq!(human.code, 0);
    for name in [&region, &stream, &server] {
        let line = human
            .stdout
            .lines()
            .find(|l| l.contains(name.as_str()))
            .expect("a row");
        assert!(line.contains(" ok "), "{line}");
    }
    assert!(human.stdout.starts_with("KIND"), "{}", human.stdout);
}

#[test]
fn colour_only_on_request_never_in_a_pipe_and_never_with_no_color() {
    let region = unique("ls-colour");
    let _c = Cleanup(vec![region.clone()]);
    let _r = Proc::peer(&["region", &region, "/t", "0", "0"]);
    let piped = weft(&["ls"]);
    assert!(
        !piped.stdout.contains('\x1b'),
        "a pipe gets no escape codes"
    );
    let forced = weft_env(&["ls"], &[("CLICOLOR_FORCE", "1")]);
    assert!(
        forced.stdout.contains("\x1b["),
        "CLICOLOR_FORCE=1 keeps colour"
    );
    let no = weft_env(&["ls"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!no.stdout.contains('\x1b'), "NO_COLOR wins");
}

#[test]
fn a_sigkilled_creator_leaves_an_abandoned_region() {
    let region = unique("ls-dead");
    let _c = Cleanup(vec![region.clone()]);
    let mut r = Proc::peer(&["region", &region, "/t", "1", "0"]);
    let pid = r.pid();
    r.kill9();
    let o = listed(&region).expect("still listed: nobody removed it");
    assert_eq!(o["status"], "abandoned");
    assert_eq!(o["creator_alive"], false);
    assert_eq!(
        (o["alive"].as_u64(), o["dead"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(o["participants"][0]["state"], "dead");
    assert_eq!(o["participants"][0]["pid"], pid);
    let human = weft(&["ls"]);
    assert!(human.stdout.contains("abandoned"), "{}", human.stdout);
    assert!(
        human.stdout.contains("`weft clean` removes"),
        "{}",
        human.stdout
    );
}

/// The bytes of an object header (docs/protocol.md), ready, of `kind` and `total` bytes.
fn header(kind: u32, total: u64) -> Vec<u8> {
    let mut h = vec![0u8; 128];
    h[0..8].copy_from_slice(b"WEFT\x00OBJ");
    h[8..12].copy_from_slice(&weft::shm::LAYOUT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&kind.to_le_bytes());
    h[16..24].copy_from_slice(&total.to_le_bytes());
    h[28..32].copy_from_slice(&0x5245_4459u32.to_le_bytes());
    h
}

#[test]
fn foreign_truncated_and_corrupt_files_are_reported_and_left_alone() {
    let names: Vec<String> = ["foreign", "short", "kind", "stream-cfg", "region-cfg"]
        .iter()
        .map(|t| unique(&format!("ls-bad-{t}")))
        .collect();
    let _c = Cleanup(names.clone());
    let write = |name: &str, bytes: &[u8]| std::fs::write(shm_path(name), bytes).unwrap();
    write(&names[0], &[0xab; 4096]);
    write(&names[1], &[0; 50]);
    let mut unknown_kind = header(9, 4096);
    unknown_kind.resize(4096, 0);
    write(&names[2], &unknown_kind);
    // A stream whose capacity is impossible (3 bytes).
    let mut bad_stream = header(1, 8192);
    bad_stream.resize(8192, 0);
    bad_stream[128..136].copy_from_slice(&3u64.to_le_bytes());
    bad_stream[136..144].copy_from_slice(&8u64.to_le_bytes());
    bad_stream[144..152].copy_from_slice(&4096u64.to_le_bytes());
    write(&names[3], &bad_stream);
    // A region whose configuration line holds zero participants.
    let mut bad_region = header(2, 8192);
    bad_region.resize(8192, 0);
    write(&names[4], &bad_region);

    let expect = [
        "is not a weft object",
        "is truncated",
        "object kind is 9",
        "capacity is 3",
        "is corrupt",
    ];
    for (name, want) in names.iter().zip(expect) {
        let o = listed(name).unwrap_or_else(|| panic!("{name} is listed"));
        assert_eq!(o["status"], "unusable", "{o}");
        let err = o["error"].as_str().unwrap();
        assert!(err.contains(want), "{name}: {err:?} should say {want:?}");
        let info = weft(&["info", name]);
        assert_eq!(info.code, 5, "info of an unusable object: {info:?}");
        assert!(info.stderr.contains(want), "{}", info.stderr);
    }
    let kinds: Vec<_> = names
        .iter()
        .map(|n| listed(n).unwrap()["kind"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            serde_json::Value::Null,
            serde_json::Value::Null,
            serde_json::Value::Null,
            "stream".into(),
            "region".into()
        ]
    );

    let mut args = vec!["clean"];
    args.extend(names.iter().map(String::as_str));
    let clean = weft_json(&args);
    for a in clean["actions"].as_array().unwrap() {
        assert_eq!(a["action"], "skip", "{a}");
    }
    assert_eq!(clean["actions"].as_array().unwrap().len(), names.len());
    for n in &names {
        assert!(exists(n), "{n} must never be removed");
    }
}

/// Many files that are not ready (each is waited for briefly, in case its creator is at work):
/// every one is listed as not ready, in name order, and `clean` skips every one. (Each waited
/// for one after another: 300 such files took `ls` 6 s; speed is not asserted here.)
#[test]
fn ls_and_clean_report_every_one_of_many_not_ready_files() {
    let names: Vec<String> = (0..40).map(|_| unique("ls-many")).collect();
    let _c = Cleanup(names.clone());
    for n in &names {
        std::fs::write(shm_path(n), vec![0u8; 4096]).unwrap();
    }
    let listed: Vec<serde_json::Value> = weft_json(&["ls"])["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| names.iter().any(|n| o["name"] == n.as_str()))
        .cloned()
        .collect();
    assert_eq!(listed.len(), names.len());
    let mut sorted = names.clone();
    sorted.sort();
    for (o, n) in listed.iter().zip(&sorted) {
        assert_eq!(o["name"], n.as_str(), "in name order");
        assert_eq!(o["status"], "not-ready", "{o}");
    }
    let mut args = vec!["clean", "--dry-run"];
    args.extend(names.iter().map(String::as_str));
    let doc = weft_json(&args);
    let actions = doc["actions"].as_array().unwrap();
    assert_eq!(actions.len(), names.len(), "{doc}");
    assert!(actions.iter().all(|a| a["action"] == "skip"), "{doc}");
    let all = weft_json(&["clean", "--dry-run"]);
    for n in &names {
        let a = all["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == n.as_str());
        assert_eq!(a.expect("reported")["action"], "skip", "{n}");
    }
}
