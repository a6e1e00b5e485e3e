//! The README's Zenoh section: its configuration file parses (its Rust example runs as a doc
//! test, see build.rs).

use weft_zenoh::{BridgeConfig, ZenohMode};

#[test]
fn the_readme_configuration_file_is_valid() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let section = &readme[readme
        .find("## Beyond one machine: Zenoh")
        .expect("the README has a Zenoh section")..];
    let start = section.find("```json5\n").expect("a json5 block") + "```json5\n".len();
    let end = start + section[start..].find("```").expect("its end");
    let config = BridgeConfig::from_json5(&section[start..end]).unwrap();
    assert_eq!(config.region, "market");
    assert_eq!(config.mode, ZenohMode::Peer);
    assert!(!config.multicast_scouting);
    assert_eq!(config.key_for("/prices/AAPL"), "weft/market/prices/AAPL");
    assert!(config.outbound[0].matches("/prices/AAPL/bid"));
    assert!(config.inbound[0].matches("/orders/new") && !config.inbound[0].matches("/orders"));
}
