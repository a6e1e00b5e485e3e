//! Topic patterns: weft topic paths with `*` (exactly one segment) and `**` (any number of
//! segments, none included), the same wildcards as Zenoh key expressions, so that a pattern
//! maps one for one onto the key expression a bridge subscribes to.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One segment of a [`Pattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Lit(String),
    /// `*`: exactly one segment.
    One,
    /// `**`: zero or more segments.
    Any,
}

/// A topic pattern such as `/prices/*` or `/sensors/**`.
///
/// A pattern is a path that starts with `/`; each segment is a topic segment (ASCII letters,
/// digits, `-`, `_`, `.`), `*` (exactly one segment) or `**` (any number of segments,
/// including none). A wildcard is always a whole segment (`/prices/AA*` is refused: Zenoh key
/// expressions have no partial-chunk wildcard).
///
/// # Examples
/// ```
/// use weft_zenoh::Pattern;
/// let p: Pattern = "/prices/*".parse()?;
/// assert!(p.matches("/prices/AAPL"));
/// assert!(!p.matches("/prices/AAPL/bid"));
/// let all: Pattern = "/sensors/**".parse()?;
/// assert!(all.matches("/sensors/lidar/front"));
/// assert!(!all.matches("/prices/AAPL"));
/// assert_eq!(all.key_expr("weft/robot"), "weft/robot/sensors/**");
/// # Ok::<(), weft_zenoh::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern {
    text: String,
    segs: Vec<Seg>,
}

impl Pattern {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the rule the pattern breaks.
    pub fn new(text: &str) -> Result<Pattern> {
        let bad = |reason: &str| Error::Config {
            what: format!("topic pattern {text:?}"),
            reason: reason.into(),
        };
        let Some(rest) = text.strip_prefix('/') else {
            return Err(bad("a pattern is a topic path that starts with '/'"));
        };
        if rest.is_empty() {
            return Err(bad(
                "a pattern has at least one segment ('/**' matches every topic)",
            ));
        }
        let mut segs = Vec::new();
        for s in rest.split('/') {
            let seg = match s {
                "*" => Seg::One,
                "**" => Seg::Any,
                "" => return Err(bad("a pattern has no empty segment and no trailing '/'")),
                "." | ".." => return Err(bad("a segment cannot be '.' or '..'")),
                lit if lit.contains('*') => {
                    return Err(bad(
                        "a wildcard is a whole segment: '*' (one segment) or '**' (any number)",
                    ));
                }
                lit if lit
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) =>
                {
                    Seg::Lit(lit.into())
                }
                _ => {
                    return Err(bad(
                        "a segment holds only ASCII letters, digits, '-', '_', '.', or is a wildcard",
                    ));
                }
            };
            segs.push(seg);
        }
        Ok(Pattern {
            text: text.into(),
            segs: canonical(segs),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the topic path `topic` (as `/prices/AAPL`) matches.
    pub fn matches(&self, topic: &str) -> bool {
        let Some(rest) = topic.strip_prefix('/') else {
            return false;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        matches_from(&self.segs, &parts)
    }

    /// The Zenoh key expression this pattern covers under `prefix` (`weft/market` +
    /// `/prices/*` = `weft/market/prices/*`), in Zenoh's canonical form (the segments are kept
    /// in it).
    pub fn key_expr(&self, prefix: &str) -> String {
        let mut out = String::from(prefix);
        for s in &self.segs {
            out.push('/');
            match s {
                Seg::Lit(l) => out.push_str(l),
                Seg::One => out.push('*'),
                Seg::Any => out.push_str("**"),
            }
        }
        out
    }
}

/// `segs` in Zenoh's canonical form, which matches the same topics: `*` before `**` where
/// they are adjacent (`**/*` and `*/**` both take one segment or more), and one `**` for
/// several in a row (`**/**` says no more than `**`; the moves can bring two together:
/// `**/*/**` is `*/**/**`).
fn canonical(mut segs: Vec<Seg>) -> Vec<Seg> {
    let mut i = 0;
    while i + 1 < segs.len() {
        if segs[i] == Seg::Any && segs[i + 1] == Seg::One {
            segs.swap(i, i + 1);
            i = i.saturating_sub(1);
        } else {
            i += 1;
        }
    }
    segs.dedup_by(|b, a| *a == Seg::Any && *b == Seg::Any);
    segs
}

/// Segment matching with backtracking on `**` (patterns are short; at most a few `**`).
fn matches_from(pat: &[Seg], parts: &[&str]) -> bool {
    match pat.split_first() {
        None => parts.is_empty(),
        Some((Seg::Any, rest)) => (0..=parts.len()).any(|k| matches_from(rest, &parts[k..])),
        Some((seg, rest)) => match parts.split_first() {
            None => false,
            Some((p, more)) => {
                let ok = match seg {
                    Seg::Lit(l) => l == p,
                    _ => true,
                };
                ok && matches_from(rest, more)
            }
        },
    }
}

impl core::str::FromStr for Pattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Pattern> {
        Pattern::new(s)
    }
}

impl TryFrom<String> for Pattern {
    type Error = Error;
    fn try_from(s: String) -> Result<Pattern> {
        Pattern::new(&s)
    }
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> String {
        p.text
    }
}

impl core::fmt::Display for Pattern {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::new(s).unwrap()
    }

    #[test]
    fn wildcards_match_whole_segments() {
        assert!(p("/a/*").matches("/a/b"));
        assert!(!p("/a/*").matches("/a"));
        assert!(!p("/a/*").matches("/a/b/c"));
        assert!(p("/a/**").matches("/a/b/c"));
        assert!(p("/a/**").matches("/a/b"));
        assert!(p("/a/**").matches("/a"));
        assert!(p("/**").matches("/x"));
        assert!(p("/**/last").matches("/x/y/last"));
        assert!(p("/**/last").matches("/last"));
        assert!(!p("/**/last").matches("/x/lastly"));
        assert!(p("/*/b/**/d").matches("/a/b/c/c/d"));
        assert!(!p("/*/b/**/d").matches("/a/c/d"));
        assert!(p("/prices/AAPL").matches("/prices/AAPL"));
        assert!(!p("/prices/AAPL").matches("/prices/AAPL2"));
        assert!(!p("/**").matches("no-slash"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in [
            "", "/", "a/b", "/a/", "/a//b", "/a*", "/a/b*c", "/./a", "/a b", "/é",
        ] {
            assert!(Pattern::new(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn key_expressions_are_canonical() {
        assert_eq!(p("/prices/*").key_expr("weft/m"), "weft/m/prices/*");
        assert_eq!(p("/**/**/x").key_expr("w"), "w/**/x");
        assert_eq!(p("/**/*").key_expr("w"), "w/*/**");
        assert_eq!(p("/**/*/*/a").key_expr("w"), "w/*/*/**/a");
        // Moving a `*` before a `**` can bring two `**` together: one stays.
        assert_eq!(p("/c/**/*/**").key_expr("w"), "w/c/*/**");
        // Kept in that form, a pattern matches what it says: one segment or more after /c.
        assert!(p("/c/**/*/**").matches("/c/x") && p("/c/**/*/**").matches("/c/x/y/z"));
        assert!(!p("/c/**/*/**").matches("/c"));
        assert_eq!(p("/**/*/**/*/**").key_expr("w"), "w/*/*/**");
        // Whatever the pattern, Zenoh takes the key expression as it is (it refuses one that
        // is not canonical).
        let segs = ["a", "*", "**"];
        for a in segs {
            for b in segs {
                for c in segs {
                    for d in segs {
                        let k = p(&format!("/{a}/{b}/{c}/{d}")).key_expr("w");
                        assert!(
                            zenoh::key_expr::KeyExpr::try_from(k.as_str()).is_ok(),
                            "/{a}/{b}/{c}/{d} -> {k}"
                        );
                    }
                }
            }
        }
    }
}
