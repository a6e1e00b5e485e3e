//! A bus whose rings cannot be allocated reports it from every call that makes a topic.

use weft::ErrorKind;
use weft::bus::Bus;

/// Whether the kernel grants any allocation (`vm.overcommit_memory = 1`): then a 16 TiB ring
/// would be allocated, and its initialisation would touch every page of it.
fn overcommit_always() -> bool {
    std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "1")
}

/// The largest capacity (2^40 slots of 16 bytes, 16 TiB): the allocation fails, and each call
/// returns the error instead of the process aborting.
#[test]
fn a_bus_whose_rings_the_allocator_refuses_returns_errors() {
    if overcommit_always() {
        eprintln!("vm.overcommit_memory = 1: a 16 TiB allocation would succeed; not run");
        return;
    }
    let bus = Bus::new(u64::MAX);
    let e = bus.subscribe::<u64>("a").map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let e = bus.publisher::<u64>("a").map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let e = bus.ring::<u64>("a").map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(
        bus.topics().is_empty(),
        "a topic that failed is not registered"
    );
}

/// 2^40 slots of 2 MiB: past any address space whatever the overcommit policy.
#[test]
fn a_bus_whose_rings_exceed_the_address_space_returns_errors() {
    let bus = Bus::new(1 << 40);
    let e = bus
        .subscribe::<[u8; 1 << 20]>("big")
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(bus.topics().is_empty());
}
