//! Output: aligned tables for people, JSON for scripts, and the numbers in between.
//!
//! Colour goes through `anstream`, which strips it when the stream is not a terminal, when
//! `NO_COLOR` is set, or when `CLICOLOR=0`; `CLICOLOR_FORCE=1` keeps it.

use crate::exit::{Outcome, from_io};
use anstyle::{AnsiColor, Style};
use serde::Serialize;
use std::fmt::Display;
use std::io::Write;

/// Column headings.
pub const HEADER: Style = Style::new().bold().underline();
/// A live participant, a healthy object.
pub const GOOD: Style = AnsiColor::Green.on_default();
/// A dead participant, an abandoned object.
pub const BAD: Style = AnsiColor::Red.on_default().bold();
/// Something to look at.
pub const WARN: Style = AnsiColor::Yellow.on_default();
/// Closed rows, secondary facts.
pub const DIM: Style = Style::new().dimmed();
/// Names.
pub const NAME: Style = Style::new().bold();
/// The `error:` prefix.
pub const ERROR: Style = AnsiColor::Red.on_default().bold();

/// Standard output, with colour only where it belongs.
pub fn stdout() -> anstream::AutoStream<std::io::StdoutLock<'static>> {
    anstream::AutoStream::auto(std::io::stdout().lock())
}

/// Prints `value` as pretty JSON on stdout.
pub fn json(value: &impl Serialize) -> Outcome {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .map_err(from_io)
}

/// One table cell: its text and how it is styled.
#[derive(Debug, Clone)]
pub struct Cell {
    text: String,
    style: Style,
}

/// A plain cell.
pub fn cell(text: impl Display) -> Cell {
    Cell {
        text: text.to_string(),
        style: Style::new(),
    }
}

impl Cell {
    /// The same cell, styled.
    pub fn styled(mut self, style: Style) -> Cell {
        self.style = style;
        self
    }
}

/// A table printed with aligned columns; numbers right-aligned.
#[derive(Debug)]
pub struct Table {
    headers: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with these column headings; a heading that starts with `>` is right-aligned
    /// (the `>` is not printed).
    pub fn new(headers: &[&'static str]) -> Table {
        Table {
            right: headers.iter().map(|h| h.starts_with('>')).collect(),
            headers: headers.iter().map(|h| h.trim_start_matches('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as headings).
    pub fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    /// Writes the table.
    pub fn print(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate() {
                width[i] = width[i].max(c.text.chars().count());
            }
        }
        let heads: Vec<Cell> = self
            .headers
            .iter()
            .map(|h| cell(h).styled(HEADER))
            .collect();
        for row in std::iter::once(&heads).chain(&self.rows) {
            let last = row.len() - 1;
            for (i, c) in row.iter().enumerate() {
                let pad = width[i] - c.text.chars().count();
                let (left, right) = if self.right[i] { (pad, 0) } else { (0, pad) };
                let right = if i == last { 0 } else { right };
                write!(
                    w,
                    "{:left$}{}{}{:#}{:right$}",
                    "", c.style, c.text, c.style, ""
                )?;
                if i != last {
                    write!(w, "  ")?;
                }
            }
            writeln!(w)?;
        }
        Ok(())
    }
}

/// `data` as printable ASCII: every other byte, and the backslash, as `\xNN`. For what other
/// processes wrote (payloads, type names): it can neither move the cursor, nor recolour,
/// retitle or clear the terminal, nor break a line, and it reads back unambiguously.
pub fn escaped(data: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(data.len());
    for &b in data {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}

/// `1.5 KiB`, `4.0 MiB`, `512 B`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A latency in nanoseconds: `850 ns`, `12.3 µs`, `4.5 ms`.
pub fn nanos(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} s", ns as f64 / 1e9)
    }
}

/// A duration as the user gave it, for messages: `300 ms`, `1.5 s`, `90 s`, `250 µs`.
pub fn duration(d: std::time::Duration) -> String {
    if d.as_millis() == 0 && !d.is_zero() {
        format!("{} µs", d.as_micros())
    } else if d.as_secs() == 0 {
        format!("{} ms", d.as_millis())
    } else {
        let s = format!("{:.3}", d.as_secs_f64());
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// How long ago `unix_ns` was: `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`.
pub fn ago(unix_ns: u64) -> String {
    if unix_ns == 0 {
        return "unknown".into();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let s = now.saturating_sub(unix_ns) / 1_000_000_000;
    match s {
        0..120 => format!("{s} s ago"),
        120..7200 => format!("{} min ago", s / 60),
        7200..172_800 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// The style for a participant state.
pub fn state_style(state: weft::shm::PeerState) -> Style {
    match state {
        weft::shm::PeerState::Alive => GOOD,
        weft::shm::PeerState::Dead => BAD,
        _ => DIM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(4 << 20), "4.0 MiB");
        assert_eq!(bytes(300 << 30), "300 GiB");
        assert_eq!(nanos(850), "850 ns");
        assert_eq!(nanos(12_345), "12.3 µs");
        assert_eq!(nanos(7_823), "7.8 µs");
        assert_eq!(nanos(5_107_700), "5.1 ms");
        assert_eq!(nanos(4_500_000_000), "4.5 s");
        use std::time::Duration;
        assert_eq!(duration(Duration::from_millis(300)), "300 ms");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(duration(Duration::from_secs(90)), "90 s");
        assert_eq!(duration(Duration::from_micros(250)), "250 µs");
        assert_eq!(duration(Duration::ZERO), "0 ms");
    }

    #[test]
    fn tables_align_and_carry_no_colour_into_a_pipe() {
        let mut t = Table::new(&["NAME", ">SIZE"]);
        t.row(vec![cell("a").styled(BAD), cell(10)]);
        t.row(vec![cell("long-name"), cell(2048)]);
        let mut raw = Vec::new();
        t.print(&mut anstream::StripStream::new(&mut raw)).unwrap();
        let text = String::from_utf8(raw).unwrap();
        assert_eq!(text, "NAME       SIZE\na            10\nlong-name  2048\n");
    }
}
