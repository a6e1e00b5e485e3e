//! `weft pub` and `weft echo`: a round trip between two weft processes, byte-exact; joining a
//! region another process made; timeouts, missing objects and dead publishers with their exit
//! statuses.

mod common;

use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lines of JSON.
fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn pub_to_echo_round_trip_is_byte_exact() {
    let region = unique("rt");
    let target = format!("{region}/bytes/all");
    let _c = Cleanup(vec![region.clone()]);
    // Every byte value, including NUL, newline and invalid UTF-8.
    let payload: Vec<u8> = (0..=255u8).collect();
    let echo = Proc::weft(&[
        "echo",
        &target,
        "--wait",
        "--count",
        "5",
        "--json",
        "--timeout",
        "30",
    ]);
    let published = weft_json(&[
        "pub",
        &target,
        &hex(&payload),
        "--hex",
        "--count",
        "5",
        "--rate",
        "200",
        "--wait-subscribers",
        "1",
        "--timeout",
        "30",
    ]);
    assert_eq!(published["published"], 5);
    assert_eq!(published["bytes"], 256);
    assert_eq!(published["created"], true, "pub made the region");
    let run = echo.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
    let samples = json_lines(&run.stdout);
    assert_eq!(samples.len(), 5);
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(s["hex"], hex(&payload), "sample {i} is byte-exact");
        assert_eq!(s["len"], 256);
        assert_eq!(s["seq"], i as u64);
        assert!(s.get("text").is_none(), "not UTF-8: no text field");
    }
    // Both left: the last one out removed the region, or (when both left at the same moment
    // and each saw the other) nobody is alive in it and `weft clean` would remove it.
    let o = listed(&region);
    assert!(
        o.as_ref()
            .is_none_or(|o| o["status"] == "abandoned" && o["alive"] == 0),
        "{o:?}"
    );
}

#[test]
fn large_messages_and_hex_and_text_formats() {
    let region = unique("rt-big");
    let target = format!("{region}/big");
    let _c = Cleanup(vec![region.clone()]);
    let echo = Proc::weft(&[
        "echo",
        &target,
        "--wait",
        "--count",
        "2",
        "--format",
        "hex",
        "--timeout",
        "30",
    ]);
    // 10 000 bytes: more than the default 4 KiB block, so `pub` makes bigger blocks.
    let published = weft_json(&[
        "pub",
        &target,
        "0123456789",
        "--size",
        "10000",
        "--count",
        "2",
        "--wait-subscribers",
        "1",
        "--timeout",
        "30",
    ]);
    assert_eq!(published["bytes"], 10000);
    let run = echo.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
    let want = hex(&b"0123456789".repeat(1000));
    assert_eq!(run.stdout, format!("{want}\n{want}\n"));

    let region = unique("rt-text");
    let target = format!("{region}/t");
    let _c2 = Cleanup(vec![region.clone()]);
    let echo = Proc::weft(&["echo", &target, "--wait", "--count", "1", "--timeout", "30"]);
    let r = weft(&[
        "pub",
        &target,
        "a\\b\tc",
        "--wait-subscribers",
        "1",
        "--timeout",
        "30",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("published 1 message of 5 B"),
        "{}",
        r.stdout
    );
    let run = echo.finish(Duration::from_secs(30));
    assert_eq!(
        run.stdout, "a\\x5cb\\x09c\n",
        "text escapes what is not printable"
    );
}

#[test]
fn pub_joins_a_region_another_process_made() {
    let region = unique("join");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["region", &region, "/t", "2", "0"]);
    let r = weft_json(&["pub", &format!("{region}/t"), "hello", "--count", "3"]);
    assert_eq!(r["created"], false);
    assert_eq!(
        (r["first_seq"].as_u64(), r["last_seq"].as_u64()),
        (Some(2), Some(4))
    );
    let t = weft_json(&["info", &format!("{region}/t")]);
    assert_eq!(t["published"], 5);
    // A new topic in the same region.
    let r = weft_json(&["pub", &format!("{region}/other"), "x", "--mode", "latest"]);
    assert_eq!(r["first_seq"], 0);
    let t = weft_json(&["info", &format!("{region}/other")]);
    assert_eq!(t["mode"], "latest");
    // The owner is still there: the region was not removed by pub leaving.
    assert!(exists(&region));
}

#[test]
fn pub_joins_an_inline_topic_with_its_size_and_kind() {
    let region = unique("join-inline");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["region", &region, "/t", "0", "0", "inline"]);
    // A latest-value inline topic of 8 bytes: joined as one, not as a block topic.
    let r = weft_json(&["pub", &format!("{region}/inline/latest"), "12345678"]);
    assert_eq!(
        (r["created"].as_bool(), r["first_seq"].as_u64()),
        (Some(false), Some(1))
    );
    let t = weft_json(&["info", &format!("{region}/inline/latest")]);
    assert_eq!((&t["published"], &t["latest"]), (&2.into(), &true.into()));
    // A message of another size is refused with the topic's size in the message.
    let short = weft(&["pub", &format!("{region}/inline/plain"), "123"]);
    assert_eq!(short.code, 1, "{short:?}");
    assert!(
        short
            .stderr
            .contains("carries inline messages of 8 bytes: a message of 3 bytes is refused"),
        "{}",
        short.stderr
    );
    // A single-publisher topic whose publisher is alive is not taken from it.
    let held = weft(&["pub", &format!("{region}/inline/latest-single"), "12345678"]);
    assert_ne!(held.code, 0, "{held:?}");
    assert!(
        held.stderr.contains(&format!(
            "the publisher of '{region}/inline/latest-single' is held by live process"
        )),
        "{}",
        held.stderr
    );
}

#[test]
fn echo_history_and_timeouts() {
    let region = unique("echo-t");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["region", &region, "/t", "4", "0"]);
    let r = weft(&[
        "echo",
        &target,
        "--history",
        "2",
        "--count",
        "2",
        "--timeout",
        "10",
    ]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "msg-2\nmsg-3\n"), "{r:?}");
    let r = weft(&["echo", &target, "--timeout", "300ms"]);
    assert_eq!(r.code, 4, "nothing published: {r:?}");
    // What it waited for, and how long.
    assert!(
        r.stderr
            .contains(&format!("no sample arrived on '{target}' within 300 ms")),
        "{}",
        r.stderr
    );
    let r = weft(&[
        "echo",
        &target,
        "--history",
        "1",
        "--count",
        "3",
        "--timeout",
        "300ms",
    ]);
    assert_eq!(r.code, 4, "{r:?}");
    assert_eq!(r.stdout, "msg-3\n");
    assert!(
        r.stderr.contains(&format!(
            "only 1 of 3 samples arrived on '{target}' within 300 ms"
        )),
        "{}",
        r.stderr
    );
    let r = weft(&[
        "pub",
        &target,
        "x",
        "--wait-subscribers",
        "1",
        "--timeout",
        "200ms",
    ]);
    r.fails_with(
        4,
        &format!("'{target}' has 0 of 1 subscribers after 200 ms"),
    );
}

/// --timeout bounds the whole wait, the wait for a region's creator to finish included: a
/// region whose creator (this test process, alive) has not made it ready once held `echo` and
/// `pub` for the library's fixed 1 s wait whatever --timeout said, and then failed as an
/// unusable object (status 5). Now they give up when the user's timeout runs out (status 4),
/// saying what they waited for and for how long, as for a region or topic that never came.
#[test]
fn timeouts_bound_the_wait_for_the_region_and_say_what_was_waited_for() {
    let region = unique("being-made");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    region_being_made(&region, std::process::id());
    let waited = format!(
        "region '{region}' was not made ready by its creator (process {}) within 300 ms",
        std::process::id()
    );
    for args in [
        vec!["echo", &target, "--wait", "--timeout", "300ms"],
        vec!["echo", &target, "--timeout", "0.3"],
        vec![
            "pub",
            &target,
            "x",
            "--wait-subscribers",
            "1",
            "--timeout",
            "0.3s",
        ],
    ] {
        let r = weft(&args);
        assert_eq!(r.code, 4, "{args:?}: {r:?}");
        assert!(r.stderr.contains(&waited), "{args:?}: {}", r.stderr);
    }

    let missing = unique("never");
    let r = weft(&[
        "echo",
        &format!("{missing}/t"),
        "--wait",
        "--timeout",
        "300ms",
    ]);
    r.fails_with(
        4,
        &format!("region '{missing}' did not appear within 300 ms"),
    );
    let live = unique("no-topic");
    let _c2 = Cleanup(vec![live.clone()]);
    let _owner = Proc::peer(&["region", &live, "/t", "0", "0"]);
    let r = weft(&[
        "echo",
        &format!("{live}/nope"),
        "--wait",
        "--timeout",
        "1.5s",
    ]);
    r.fails_with(
        4,
        &format!("topic '/nope' did not appear in region '{live}' within 1.5 s"),
    );
}

/// --wait waits for a region to be made ready, as for one to appear: it once gave up after
/// the library's 1 s wait for the creator (status 5).
#[test]
fn echo_wait_waits_for_a_region_being_made() {
    let region = unique("wait-made");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    region_being_made(&region, std::process::id());
    let mut echo = Proc::weft(&["echo", &target, "--wait", "--count", "1", "--timeout", "60"]);
    // Longer than the library's own wait for a creator: echo is still waiting.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        echo.child.try_wait().unwrap().is_none(),
        "echo --wait gave up on a region being made"
    );
    // The half-made region goes, a real one comes: echo gets its messages.
    std::fs::remove_file(shm_path(&region)).unwrap();
    let _owner = Proc::peer(&["region", &region, "/t", "0", "20"]);
    assert!(echo.line().starts_with("tick-"));
    let run = echo.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
}

/// An echo whose topic is unregistered by its publisher says which topic ended and how, not
/// only "closed".
#[test]
fn echo_names_a_topic_its_publisher_unregistered() {
    let region = unique("echo-unreg");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["unregister", &region, "/t"]);
    let r = weft(&["echo", &target, "--timeout", "30"]);
    assert_eq!(r.stdout, "last\n", "{r:?}");
    r.fails_with(
        6,
        &format!("topic '/t' of region '{region}' was unregistered by its publisher"),
    );
}

/// A region every participant row of which is held: `echo` and `pub` say which region they
/// could not join (the library's error does not).
#[test]
fn echo_and_pub_name_a_region_they_cannot_join() {
    let region = unique("full");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["full", &region, "/t"]);
    for args in [vec!["echo", &target], vec!["pub", &target, "x"]] {
        let r = weft(&args);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(
            r.stderr
                .contains(&format!("cannot join region '{region}': ")),
            "{args:?}: {}",
            r.stderr
        );
    }
}

/// `pub --mode` on a topic registered in another mode names both modes as the command line
/// spells them (the library's error gave the asked-for mode as a number: "topic mode is 2");
/// in the topic's own mode it joins the topic as it is, its single-publisher setting included
/// (refused by number too, "single-publisher setting of a topic is 0").
#[test]
fn pub_mode_names_the_mode_a_topic_was_registered_in() {
    let region = unique("pub-mode");
    let _c = Cleanup(vec![region.clone()]);
    let _owner = Proc::peer(&["region", &region, "/t", "0", "0", "inline"]);
    assert_eq!(
        weft(&["pub", &format!("{region}/lat"), "x", "--mode", "latest"]).code,
        0
    );
    for (topic, data, mode, registered) in [
        ("/t", "x", "latest", "a blocks topic"),
        ("/lat", "x", "blocks", "a latest topic"),
        ("/inline/plain", "12345678", "blocks", "an inline topic"),
        ("/inline/latest", "12345678", "latest", "an inline topic"),
    ] {
        let r = weft(&["pub", &format!("{region}{topic}"), data, "--mode", mode]);
        assert_eq!(r.code, 1, "{topic} --mode {mode}: {r:?}");
        let want = format!("topic '{topic}' of region '{region}' is {registered}, not {mode}");
        assert!(r.stderr.contains(&want), "{want:?} in {}", r.stderr);
    }
    let r = weft(&["pub", &format!("{region}/t"), "x", "--mode", "blocks"]);
    assert_eq!(r.code, 0, "its own mode: {r:?}");
    let r = weft(&[
        "pub",
        &format!("{region}/blocks-single"),
        "x",
        "--mode",
        "blocks",
    ]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "the publisher of '{region}/blocks-single' is held by live process"
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn echo_and_pub_refuse_missing_and_bad_targets() {
    let region = unique("echo-bad");
    let _c = Cleanup(vec![region.clone()]);
    let r = weft(&["echo", &format!("{region}/t")]);
    r.fails_with(3, &format!("no region '{region}'"));
    let _owner = Proc::peer(&["region", &region, "/t", "0", "0"]);
    let r = weft(&["echo", &format!("{region}/nope")]);
    r.fails_with(3, "it has /t");
    for bad in [region.as_str(), "r/has space", "/t", "r/t/"] {
        assert_eq!(weft(&["echo", bad]).code, 2, "{bad:?}");
        assert_eq!(weft(&["pub", bad, "x"]).code, 2, "{bad:?}");
    }
    assert_eq!(weft(&["pub", &format!("{region}/t")]).code, 2, "no data");
    // Rates that are no number of messages per second, or fewer than one a year (1e-30 once
    // made the conversion to a period panic, exit status 101).
    for rate in ["0", "-1", "nan", "inf", "1e-30", "1e-320"] {
        let r = weft(&["pub", &format!("{region}/t"), "x", "--rate", rate]);
        assert_eq!(r.code, 2, "--rate {rate}: {r:?}");
    }
    // A timeout for a wait that was not asked for.
    let r = weft(&["pub", &format!("{region}/t"), "x", "--timeout", "1s"]);
    assert_eq!(r.code, 2, "--timeout without --wait-subscribers: {r:?}");
    assert_eq!(
        weft(&["echo", &format!("{region}/t"), "--format", "xml"]).code,
        2
    );

    let stream = unique("echo-stream");
    let _c2 = Cleanup(vec![stream.clone()]);
    let _s = Proc::peer(&["stream", &stream, "4096", "0"]);
    let r = weft(&["echo", &format!("{stream}/t")]);
    assert_eq!(r.code, 5, "a stream is not a region: {r:?}");
    assert!(
        r.stderr.contains("is a stream, not a region"),
        "{}",
        r.stderr
    );
}

#[test]
fn echo_reports_a_dead_publisher() {
    let region = unique("echo-dead");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let mut owner = Proc::peer(&["region", &region, "/t", "0", "20"]);
    let mut echo = Proc::weft(&["echo", &target, "--timeout", "30"]);
    assert!(echo.line().starts_with("tick-"), "echo is receiving");
    owner.kill9();
    let run = echo.finish(Duration::from_secs(30));
    run.fails_with(6, "died");
}

/// A pid that belonged to a process that has exited (and been reaped).
fn gone_pid() -> u32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id();
    c.wait().expect("reap");
    pid
}

/// Sends `sig` (e.g. `-INT`) to process `pid`.
fn signal(sig: &str, pid: u32) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// `pub` ("creates the region, or joins it") replaces a region its creator never finished,
/// as the library's `Publisher::create` does: a header naming a creator that is gone, and a
/// zero-filled file (a creator killed before it wrote the header, e.g. in the fallocate of a
/// large `--size`). It once only created on "not found" and failed with status 5 for ever.
#[test]
fn pub_replaces_a_region_its_creator_never_finished() {
    let dead = unique("leftover-dead");
    let zero = unique("leftover-zero");
    let _c = Cleanup(vec![dead.clone(), zero.clone()]);
    region_being_made(&dead, gone_pid());
    std::fs::write(shm_path(&zero), vec![0u8; 4096]).unwrap();
    for name in [&dead, &zero] {
        let done = weft_json(&["pub", &format!("{name}/t"), "x"]);
        assert_eq!(done["published"], 1, "{name}: {done}");
        assert_eq!(done["created"], true, "{name}: {done}");
    }
}

/// `echo --wait` waits past a region whose creator died before making it ready, for the next
/// creator to replace it (and then receives), and times out with status 4 saying so: it once
/// gave up at once with status 5.
#[test]
fn echo_wait_waits_past_a_leftover_of_a_dead_creator() {
    let region = unique("leftover-echo");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let creator = gone_pid();
    region_being_made(&region, creator);
    let r = weft(&["echo", &target, "--wait", "--timeout", "1"]);
    r.fails_with(4, &format!("(process {creator})"));
    assert!(r.stderr.contains("within 1 s"), "{}", r.stderr);

    let mut echo = Proc::weft(&["echo", &target, "--wait", "--count", "1", "--timeout", "60"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        echo.child.try_wait().unwrap().is_none(),
        "echo --wait gave up on a leftover"
    );
    // A new creator replaces the leftover: echo gets its messages.
    let _owner = Proc::peer(&["region", &region, "/t", "0", "20"]);
    assert!(echo.line().starts_with("tick-"));
    let run = echo.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
}

/// echo's "lagged" warning into a stderr pipe whose reader has gone (`weft echo ... |& head`)
/// is dropped, not a panic (status 101).
#[test]
fn echo_lag_warning_into_a_closed_stderr_pipe_does_not_panic() {
    let region = unique("lag-closed");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    // stdout is a pipe nobody reads until the publisher is done: echo blocks on it and falls
    // more than a ring (256 messages) behind.
    let mut echo = Command::new(WEFT)
        .args([
            "echo",
            &target,
            "--wait",
            "--count",
            "600",
            "--timeout",
            "5",
        ])
        .stdout(Stdio::piped())
        .stderr(writer)
        .spawn()
        .expect("start echo");
    let published = weft(&[
        "pub",
        &target,
        "x",
        "--size",
        "2000",
        "--count",
        "2000",
        "--wait-subscribers",
        "1",
        "--timeout",
        "30",
    ]);
    assert_eq!(published.code, 0, "{published:?}");
    let mut out = echo.stdout.take().unwrap();
    let mut sink = Vec::new();
    std::io::Read::read_to_end(&mut out, &mut sink).unwrap();
    let status = echo.wait().unwrap();
    // 0 if all 600 came, else 4 (the timeout): never the panic's 101.
    assert!(matches!(status.code(), Some(0 | 4)), "{status:?}");
}

/// `pub --json` interrupted while it waits for subscribers still prints its report (nothing
/// published); it once exited 0 with no output at all.
#[test]
fn pub_json_interrupted_while_waiting_for_subscribers_still_reports() {
    let region = unique("ws-int");
    let _c = Cleanup(vec![region.clone()]);
    let p = Proc::weft(&[
        "pub",
        &format!("{region}/t"),
        "x",
        "--wait-subscribers",
        "1",
        "--json",
    ]);
    eventually("the region", || exists(&region));
    std::thread::sleep(Duration::from_millis(200));
    signal("-INT", p.pid());
    let r = p.finish(Duration::from_secs(10));
    assert_eq!(r.code, 0, "{r:?}");
    let doc: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("no JSON document ({e}): {r:?}"));
    assert_eq!(doc["published"], 0, "{doc}");
    assert_eq!(doc["first_seq"], Value::Null, "{doc}");
    assert_eq!(doc["created"], true, "{doc}");
}

/// A failed `echo` (a mistyped topic) on an abandoned region leaves it in place, with its
/// unread messages and the record of who died in it: the echo once joined the region and, as
/// its last one out, removed it.
#[test]
fn a_failed_echo_leaves_an_abandoned_region_in_place() {
    let region = unique("stale-typo");
    let _c = Cleanup(vec![region.clone()]);
    let mut r = Proc::peer(&["region", &region, "/t", "3", "0"]);
    r.kill9();
    assert_eq!(listed(&region).expect("listed")["status"], "abandoned");
    let e = weft(&["echo", &format!("{region}/typo")]);
    e.fails_with(
        3,
        &format!("region '{region}' has no topic '/typo' (it has /t"),
    );
    assert!(exists(&region), "a failed echo removed the region");
    assert_eq!(listed(&region).expect("listed")["status"], "abandoned");
}

/// `pub --size N` keeps the region's pool within its 64 MiB budget (at least 3 blocks): at
/// 8 MB a message it once reserved 16 blocks, 128 MB of /dev/shm (480 MB at 30 MB). Its topic
/// rings keep fewer blocks than the pool has, so that publishing goes on: with 256 ring slots
/// and 64 blocks of 1 MiB the 64th publish failed ("full").
#[test]
fn pub_size_keeps_the_pool_within_its_budget() {
    let region = unique("budget");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    for (size, blocks, slots) in [(8_000_000u64, 8u64, 4u64), (30_000_000, 3, 2)] {
        let p = Proc::weft(&[
            "pub",
            &target,
            "--size",
            &size.to_string(),
            "--wait-subscribers",
            "1",
        ]);
        // Made ready once its memory is reserved: `info` does not wait for that.
        eventually("the region", || {
            listed(&region).is_some_and(|o| o["status"] == "ok")
        });
        let doc = weft_json(&["info", &region]);
        let pool = &doc["region"];
        assert_eq!(pool["blocks"], blocks, "--size {size}: {doc}");
        assert_eq!(pool["ring_slots"], slots, "--size {size}: {doc}");
        assert!(pool["block_size"].as_u64().unwrap() >= size, "{doc}");
        let total = doc["size"].as_u64().unwrap();
        let most = (64u64 << 20).max(3 * size) + (4 << 20);
        assert!(total < most, "--size {size}: {total} bytes of /dev/shm");
        signal("-INT", p.pid());
        let r = p.finish(Duration::from_secs(10));
        assert_eq!(r.code, 0, "{r:?}");
        eventually("the region to go", || !exists(&region));
    }
    for (size, count) in [("30000000", "5"), ("1048576", "100")] {
        let done = weft_json(&["pub", &target, "--size", size, "--count", count]);
        assert_eq!(done["published"].to_string(), count, "{done}");
        eventually("the region to go", || !exists(&region));
    }
}

/// An echo of a topic that was unregistered (its entry kept, closed, by a subscription of a
/// process that died since) in a region whose participants all died is refused before it
/// joins, as for a topic that never was: joining, then leaving as the last participant, would
/// have removed the region with everything its dead left in it.
#[test]
fn echo_of_an_unregistered_topic_leaves_an_abandoned_region_alone() {
    let region = unique("echo-closed");
    let _c = Cleanup(vec![region.clone()]);
    let mut owner = Proc::peer(&["unregister", &region, "/t"]);
    let mut sub = Proc::peer(&["subscriber", &region, "/t", "0"]);
    eventually("the publisher unregisters /t", || {
        weft::pubsub::details(&region).is_ok_and(|d| {
            d.topics
                .iter()
                .any(|t| t.stats.name == "/t" && !t.registered)
        })
    });
    sub.kill9();
    owner.kill9();
    let r = weft(&["echo", &format!("{region}/t"), "--timeout", "1"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert!(exists(&region), "the refused echo removed the region");
}

/// `weft pub` refused for what the region says already (a mode conflict, a message larger
/// than its blocks) refuses before it joins: a region whose participants all died stays, as
/// `weft echo` leaves it.
#[test]
fn a_refused_pub_leaves_an_abandoned_region_alone() {
    let region = unique("pub-abandoned");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let mut owner = Proc::peer(&["region", &region, "/t", "1", "0"]);
    owner.kill9();
    let big = "y".repeat(5000);
    for args in [
        vec!["pub", &target, "x", "--mode", "latest"],
        vec!["pub", &target, &big],
    ] {
        let r = weft(&args);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(exists(&region), "{args:?} removed the region");
    }
}

/// A typed topic takes messages of its type's size only: `weft pub` refuses another size,
/// naming the type, where it published them and left every typed subscriber a `TypeMismatch`.
#[test]
fn pub_on_a_typed_topic_takes_messages_of_its_size_only() {
    use weft::pubsub::{Config, Publisher, Subscriber};
    let region = unique("pub-typed");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let p = Publisher::create(&region, &Config::default()).unwrap();
    let _t = p.register_typed::<u64>("/t").unwrap();
    let s = Subscriber::connect(&region).unwrap();
    let mut typed = s.subscribe_values::<u64>("/t").unwrap();
    weft(&["pub", &target, "abc"]).fails_with(
        1,
        &format!(
            "topic '/t' of region '{region}' carries values of type u64 (8 bytes): a message \
             of 3 bytes is refused"
        ),
    );
    assert_eq!(
        typed.try_recv().map(|v| *v).unwrap_err().kind(),
        weft::ErrorKind::Empty
    );
    let r = weft(&["pub", &target, "--hex", "2a00000000000000"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(*typed.recv_timeout(Duration::from_secs(5)).unwrap(), 42);
}

/// `pub --rate HZ` without `--count` publishes until interrupted ("default: 1, or until
/// interrupted with --rate"), and Ctrl-C ends it cleanly with its report.
#[test]
fn pub_rate_without_count_publishes_until_interrupted() {
    let region = unique("rate-forever");
    let target = format!("{region}/t");
    let _c = Cleanup(vec![region.clone()]);
    let mut publisher = Proc::weft(&["pub", &target, "x", "--rate", "50", "--json"]);
    let echo = weft(&["echo", &target, "--wait", "--count", "3", "--timeout", "30"]);
    assert_eq!(echo.code, 0, "{echo:?}");
    assert_eq!(echo.stdout, "x\nx\nx\n");
    assert!(
        publisher.child.try_wait().unwrap().is_none(),
        "pub --rate without --count stopped by itself"
    );
    signal("-INT", publisher.pid());
    let run = publisher.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON report");
    assert!(doc["published"].as_u64().unwrap() >= 3, "{doc}");
}

/// `pub --rate HZ` spaces its messages: the last of N goes out no earlier than (N-1)/HZ
/// seconds after the first (a lower bound only; never an upper one).
#[test]
fn pub_rate_spaces_its_messages() {
    let region = unique("rate-paced");
    let _c = Cleanup(vec![region.clone()]);
    let start = std::time::Instant::now();
    let doc = weft_json(&[
        "pub",
        &format!("{region}/t"),
        "x",
        "--rate",
        "10",
        "--count",
        "6",
    ]);
    let took = start.elapsed();
    assert_eq!(doc["published"], 6);
    assert!(
        took >= Duration::from_millis(500),
        "6 messages at 10 per second took only {took:?}"
    );
}
