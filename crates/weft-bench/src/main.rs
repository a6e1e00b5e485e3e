//! weft-bench (being built).
fn main() {}
