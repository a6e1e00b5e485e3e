//! Pub/sub test messages: a 16-byte header (publisher id, that publisher's counter) and a
//! body whose length and bytes follow from them, so that any receiver can check a message
//! byte for byte and tell which publisher sent it.

use super::pattern::{Rng, check, fill};

/// Writes message `counter` of publisher `id` into `buf` (at least `16 + max` bytes);
/// returns its length.
pub fn make(seed: u64, id: u64, counter: u64, max: usize, buf: &mut [u8]) -> usize {
    let body = Rng(seed ^ (id << 40) ^ counter).len(max) - 1;
    buf[..8].copy_from_slice(&id.to_le_bytes());
    buf[8..16].copy_from_slice(&counter.to_le_bytes());
    fill(seed ^ (id << 40), counter, &mut buf[16..16 + body]);
    16 + body
}

/// The (publisher id, counter) of a message if it is byte-exact, else `None`.
pub fn verify(seed: u64, max: usize, msg: &[u8]) -> Option<(u64, u64)> {
    if msg.len() < 16 {
        return None;
    }
    let id = u64::from_le_bytes(msg[..8].try_into().unwrap());
    let counter = u64::from_le_bytes(msg[8..16].try_into().unwrap());
    let body = Rng(seed ^ (id << 40) ^ counter).len(max) - 1;
    (msg.len() == 16 + body && check(seed ^ (id << 40), counter, &msg[16..]))
        .then_some((id, counter))
}
