//! Two regions bridged both ways on the same pattern: every sample arrives exactly once in
//! each region, none comes back to where it was published.

mod common;

use common::{Cleanup, config, free_port, unique};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber, Subscription};
use weft_zenoh::Bridge;

const TOPICS: [&str; 3] = ["/chat/a", "/chat/b", "/chat/both"];
const N: usize = 200;

/// Receives on `sub` until nothing has come for `quiet`; counts each payload.
fn collect(sub: &mut Subscription, quiet: Duration, into: &mut BTreeMap<String, usize>) {
    loop {
        match sub.recv_timeout(quiet) {
            Ok(s) => {
                *into
                    .entry(String::from_utf8_lossy(&s).into_owned())
                    .or_default() += 1
            }
            Err(weft::Error::Timeout) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn both_directions_on_one_pattern_deliver_each_sample_once() {
    let (a, b) = (unique("loop-a"), unique("loop-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("loop");
    let port = free_port();
    let shape = Config::default().ring_slots(2048).blocks(2048 + 256);

    let pa = Publisher::create(&a, &shape).unwrap();
    let pb = Publisher::create(&b, &shape).unwrap();
    let ta: Vec<_> = TOPICS.iter().map(|t| pa.register(t).unwrap()).collect();
    let tb: Vec<_> = TOPICS.iter().map(|t| pb.register(t).unwrap()).collect();
    let (sa, sb) = (
        Subscriber::connect(&a).unwrap(),
        Subscriber::connect(&b).unwrap(),
    );
    let mut subs_a: Vec<_> = TOPICS.iter().map(|t| sa.subscribe(t).unwrap()).collect();
    let mut subs_b: Vec<_> = TOPICS.iter().map(|t| sb.subscribe(t).unwrap()).collect();

    let one = Bridge::start(
        config(&a, &prefix)
            .outbound("/chat/**")
            .unwrap()
            .inbound("/chat/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let two = Bridge::start(
        config(&b, &prefix)
            .outbound("/chat/**")
            .unwrap()
            .inbound("/chat/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    for t in TOPICS {
        assert!(one.wait_matched(t, Duration::from_secs(20)), "{t} from A");
        assert!(two.wait_matched(t, Duration::from_secs(20)), "{t} from B");
    }

    // A publishes on /chat/a and /chat/both, B on /chat/b and /chat/both.
    for i in 0..N {
        pa.publish(&ta[0], format!("a{i}").as_bytes()).unwrap();
        pa.publish(&ta[2], format!("A{i}").as_bytes()).unwrap();
        pb.publish(&tb[1], format!("b{i}").as_bytes()).unwrap();
        pb.publish(&tb[2], format!("B{i}").as_bytes()).unwrap();
    }

    let expect = |tags: &[&str]| -> BTreeMap<String, usize> {
        tags.iter()
            .flat_map(|t| (0..N).map(move |i| (format!("{t}{i}"), 1)))
            .collect()
    };
    let wanted = [expect(&["a"]), expect(&["b"]), expect(&["A", "B"])];
    let mut got: Vec<Vec<BTreeMap<String, usize>>> = vec![vec![BTreeMap::new(); 3]; 2];
    // Everything expected, then a quiet half second after which nothing more may be there.
    let deadline = Instant::now() + Duration::from_secs(20);
    for (r, subs) in [&mut subs_a, &mut subs_b].into_iter().enumerate() {
        for (k, sub) in subs.iter_mut().enumerate() {
            while got[r][k].len() < wanted[k].len() && Instant::now() < deadline {
                collect(sub, Duration::from_millis(100), &mut got[r][k]);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    for (r, subs) in [&mut subs_a, &mut subs_b].into_iter().enumerate() {
        for (k, sub) in subs.iter_mut().enumerate() {
            collect(sub, Duration::from_millis(1), &mut got[r][k]);
            let (region, topic) = (["A", "B"][r], TOPICS[k]);
            let twice: Vec<_> = got[r][k].iter().filter(|(_, n)| **n > 1).take(5).collect();
            assert!(
                twice.is_empty(),
                "{topic} in {region}: received more than once: {twice:?}"
            );
            assert_eq!(got[r][k], wanted[k], "{topic} in {region}");
        }
    }

    // Each bridge skipped exactly what it had bridged in; nothing was lost or refused.
    for (bridge, own) in [
        (&one, ["/chat/b", "/chat/both"]),
        (&two, ["/chat/a", "/chat/both"]),
    ] {
        let stats = bridge.stats();
        for t in own {
            assert_eq!(stats.outbound(t).unwrap().looped, N as u64, "{t}: {stats}");
            assert_eq!(stats.inbound(t).unwrap().samples, N as u64, "{t}: {stats}");
        }
        for t in stats.inbound.iter().chain(&stats.outbound) {
            assert_eq!((t.lagged, t.refused, t.dropped), (0, 0, 0), "{stats}");
        }
    }
}
