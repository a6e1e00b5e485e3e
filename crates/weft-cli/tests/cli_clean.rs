//! `weft clean`: reclaims what a SIGKILLed participant held in a region that lives on, removes
//! objects whose participants all died, and never touches a live one. Every test names its
//! own objects, so that it never cleans what another test (or another run) is looking at.

mod common;

use common::*;

fn participant<'a>(doc: &'a serde_json::Value, role: &str) -> Vec<&'a serde_json::Value> {
    doc["region"]["participants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] == role)
        .collect()
}

#[test]
fn clean_reclaims_a_sigkilled_subscriber_and_the_region_lives_on() {
    let region = unique("clean-live");
    let _c = Cleanup(vec![region.clone()]);
    let publisher = Proc::peer(&["region", &region, "/t", "8", "20"]);
    let mut sub = Proc::peer(&["subscriber", &region, "/t", "5"]);
    sub.kill9();

    let before = weft_json(&["info", &region]);
    let dead = participant(&before, "subscriber");
    assert_eq!(
        (&dead[0]["state"], &dead[0]["held"]),
        (&"dead".into(), &5.into())
    );

    let dry = weft_json(&["clean", &region, "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["actions"][0]["action"], "reclaim");
    let still = weft_json(&["info", &region]);
    assert_eq!(
        participant(&still, "subscriber")[0]["state"],
        "dead",
        "a dry run changes nothing"
    );

    let done = weft_json(&["clean", &region]);
    assert_eq!(done["dry_run"], false);
    assert_eq!(done["reclaimed"], 1);
    assert_eq!(done["removed"], 0);
    assert_eq!(done["actions"][0]["action"], "reclaim");
    assert_eq!(
        done["released"], 5,
        "the five samples the dead subscriber held"
    );

    let after = weft_json(&["info", &region]);
    assert_eq!(after["dead"], 0);
    assert_eq!(participant(&after, "subscriber")[0]["held"], 0);
    let publ = participant(&after, "publisher");
    assert_eq!(
        (&publ[0]["state"], &publ[0]["pid"]),
        (&"alive".into(), &publisher.pid().into())
    );
    assert!(exists(&region));

    // The live publisher goes on publishing, and a new subscriber receives.
    let r = weft(&[
        "echo",
        &format!("{region}/t"),
        "--count",
        "2",
        "--timeout",
        "10",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.lines().all(|l| l.starts_with("tick-")),
        "{}",
        r.stdout
    );

    // Nothing left to do.
    let again = weft_json(&["clean", &region]);
    assert_eq!(again["actions"].as_array().unwrap().len(), 0);
}

#[test]
fn clean_removes_what_sigkilled_processes_left_and_only_that() {
    let (region, stream, server) = (unique("clean-r"), unique("clean-s"), unique("clean-v"));
    let _c = Cleanup(vec![region.clone(), stream.clone(), server.clone()]);
    let mut procs = [
        Proc::peer(&["region", &region, "/t", "3", "0"]),
        Proc::peer(&["stream", &stream, "4096", "3"]),
        Proc::peer(&["server", &server]),
    ];
    for p in &mut procs {
        p.kill9();
    }
    let names = [region.as_str(), stream.as_str(), server.as_str()];

    // Without names, a dry run lists ours among whatever else is on this machine.
    let all = weft_json(&["clean", "--dry-run"]);
    for n in names {
        let a = all["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == n);
        assert_eq!(a.expect("listed")["action"], "remove", "{n}");
        assert!(exists(n), "a dry run removes nothing");
    }

    let mut args = vec!["clean"];
    args.extend(names);
    let human = weft(&args);
    assert_eq!(human.code, 0, "{human:?}");
    for n in names {
        let line = human.stdout.lines().find(|l| l.contains(n)).expect("a row");
        assert!(line.starts_with("removed"), "{line}");
        assert!(!exists(n), "{n} was removed");
        assert!(listed(n).is_none());
    }
}

#[test]
fn clean_never_touches_a_live_participant() {
    let (region, stream, half, server) = (
        unique("keep-r"),
        unique("keep-s"),
        unique("keep-half"),
        unique("keep-v"),
    );
    let _c = Cleanup(vec![
        region.clone(),
        stream.clone(),
        half.clone(),
        server.clone(),
    ]);
    let _r = Proc::peer(&["region", &region, "/t", "3", "0"]);
    let _s = Proc::peer(&["stream", &stream, "4096", "3"]);
    let _v = Proc::peer(&["server", &server]);
    // A stream whose reader died while its writer lives on.
    let _w = Proc::peer(&["stream", &half, "4096", "3"]);
    let mut reader = Proc::peer(&["stream-reader", &half]);
    reader.kill9();
    assert_eq!(listed(&half).unwrap()["dead"], 1);

    let names = [
        region.as_str(),
        stream.as_str(),
        half.as_str(),
        server.as_str(),
    ];
    let mut args = vec!["clean"];
    args.extend(names);
    let done = weft_json(&args);
    assert_eq!(done["actions"].as_array().unwrap().len(), 0, "{done}");
    for n in names {
        assert!(exists(n), "{n} is live and stays");
        assert_eq!(listed(n).unwrap()["status"], "ok");
    }
    let s = weft_json(&["info", &stream]);
    assert_eq!(
        s["stream"]["used"],
        3 * (8 + 104),
        "the records are untouched"
    );
}

#[test]
fn clean_keeps_a_closed_streams_records_for_a_reader_yet_to_come() {
    let stream = unique("keep-mailbox");
    let _c = Cleanup(vec![stream.clone()]);
    let _writer_left = Proc::peer(&["mailbox", &stream, "3"]);
    let o = listed(&stream).unwrap();
    assert_eq!(
        (o["alive"].as_u64(), o["dead"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(o["participants"][0]["state"], "closed");
    assert_eq!(o["status"], "ok");
    let done = weft_json(&["clean", &stream]);
    assert_eq!(done["actions"].as_array().unwrap().len(), 0, "{done}");
    assert!(exists(&stream));
    assert_eq!(
        weft_json(&["info", &stream])["stream"]["used"],
        3 * (8 + 104)
    );
}

#[test]
fn clean_refuses_missing_and_bad_names_before_touching_anything() {
    let dead = unique("clean-first");
    let _c = Cleanup(vec![dead.clone()]);
    let mut p = Proc::peer(&["region", &dead, "/t", "0", "0"]);
    p.kill9();
    let missing = unique("clean-missing");
    let r = weft(&["clean", &dead, &missing]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(exists(&dead), "nothing is cleaned when a name is missing");
    let r = weft(&["clean", &dead, "bad name"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(exists(&dead));
    assert_eq!(weft(&["clean", &dead]).code, 0);
    assert!(!exists(&dead));
}

/// A file of weft's prefix whose header names a dead creator but carries no magic (weft
/// writes its magic before the creator's pid, so no weft object looks like this): `ls` listed
/// it as abandoned and `clean` removed it. It is not weft's, and stays.
#[test]
fn clean_never_removes_a_file_without_weft_magic() {
    let name = unique("clean-nomagic");
    let path = format!("/dev/shm/weft.{name}");
    let mut header = vec![0u8; 4096];
    // The creator pid's place: a pid no process has.
    header[24..28].copy_from_slice(&4_000_000u32.to_le_bytes());
    std::fs::write(&path, &header).unwrap();
    // Removed at the end whatever happens (it is no object weft would remove).
    struct Remove(String);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(path.clone());
    let listed = listed(&name).expect("listed");
    assert_ne!(listed["status"], "abandoned", "{listed}");
    let r = weft(&["clean", &name]);
    assert!(
        std::path::Path::new(&path).exists(),
        "clean removed a file that is not weft's: {r:?}"
    );
}

/// An object never made ready (an empty file, or a header of zeros: no creator named) is
/// left alone like any other file `clean` cannot judge, and said so: "nothing to clean" hid it.
#[test]
fn clean_reports_an_object_never_made_ready_as_skipped() {
    let (empty, zeros) = (unique("clean-empty"), unique("clean-zeros"));
    let _c = Cleanup(vec![empty.clone(), zeros.clone()]);
    std::fs::write(shm_path(&empty), b"").unwrap();
    std::fs::write(shm_path(&zeros), vec![0u8; 4096]).unwrap();
    let doc = weft_json(&["clean", &empty, &zeros]);
    let actions = doc["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{doc}");
    for (a, name) in actions.iter().zip([&empty, &zeros]) {
        assert_eq!(a["name"], name.as_str());
        assert_eq!(a["action"], "skip", "{a}");
        let why = a["detail"].as_str().unwrap();
        assert!(why.starts_with("not ready"), "{why}");
        assert!(why.contains("names no creator"), "why: {why}");
    }
    let human = weft(&["clean", &empty, &zeros]);
    assert_eq!(human.code, 0, "{human:?}");
    for n in [&empty, &zeros] {
        let line = human.stdout.lines().find(|l| l.contains(n.as_str()));
        assert!(
            line.is_some_and(|l| l.starts_with("skipped") && l.contains("not ready")),
            "{}",
            human.stdout
        );
        assert!(exists(n), "left alone");
    }
}

/// The JSON report counts what it removed (or, in a dry run, would remove), and the human
/// dry run says what it would do and that nothing was changed.
#[test]
fn clean_counts_removals_and_a_dry_run_says_so() {
    let region = unique("clean-count");
    let _c = Cleanup(vec![region.clone()]);
    let mut p = Proc::peer(&["region", &region, "/t", "2", "0"]);
    p.kill9();

    let human = weft(&["clean", &region, "--dry-run"]);
    assert_eq!(human.code, 0, "{human:?}");
    let row = human
        .stdout
        .lines()
        .find(|l| l.contains(&region))
        .expect("a row");
    assert!(row.starts_with("would remove"), "{row}");
    assert!(
        human.stdout.contains("dry run: nothing was changed"),
        "{}",
        human.stdout
    );
    assert!(exists(&region));

    let dry = weft_json(&["clean", &region, "--dry-run"]);
    assert_eq!((&dry["removed"], &dry["reclaimed"]), (&1.into(), &0.into()));
    assert!(exists(&region));

    let done = weft_json(&["clean", &region]);
    assert_eq!(done["actions"][0]["action"], "remove");
    assert_eq!(
        (&done["removed"], &done["reclaimed"]),
        (&1.into(), &0.into())
    );
    assert!(!exists(&region));
}
