//! The message of the inline multi-process tests (shared with the test peer).

/// The stable name `Tick` is registered under: the test binaries and the test peer agree on it
/// although their `Tick`s have different Rust paths.
pub const TICK: &str = "weft.test.Tick/v1";

/// An inline test message: publisher id, its counter, and a check word.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Tick {
    pub id: u64,
    pub n: u64,
    pub check: u64,
}

impl Tick {
    pub fn new(id: u64, n: u64) -> Tick {
        Tick {
            id,
            n,
            check: Tick::sum(id, n),
        }
    }
    fn sum(id: u64, n: u64) -> u64 {
        (id ^ n.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    pub fn whole(&self) -> bool {
        self.check == Tick::sum(self.id, self.n)
    }
}
