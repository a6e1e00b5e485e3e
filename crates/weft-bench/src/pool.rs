//! Scenarios of this area (being built).
use crate::harness::Scenario;

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    Vec::new()
}

/// Runs this area's child side of a cross-process scenario, if `args` names one.
pub fn child(_args: &[String]) -> Option<i32> {
    None
}
