//! Topic names: URI paths inside a region, and the "region/topic" form that one-string
//! helpers (the CLI, the bindings) accept.

use crate::error::{Error, Result};

/// The longest topic name, in bytes (it is stored in a 128-byte field of the topic table).
pub const TOPIC_MAX: usize = 127;

/// Checks a topic name: a URI path of 2 to [`TOPIC_MAX`] bytes that starts with `/`, whose
/// segments are non-empty, are not `.` or `..`, and hold only ASCII letters, digits, `-`, `_`
/// and `.`; no trailing `/`.
///
/// # Errors
/// [`Error::InvalidName`] saying which rule the name broke.
///
/// # Examples
/// ```
/// use weft::pubsub::validate_topic;
/// assert!(validate_topic("/prices/AAPL").is_ok());
/// assert!(validate_topic("prices/AAPL").is_err());   // not a path
/// assert!(validate_topic("/prices//AAPL").is_err()); // empty segment
/// assert!(validate_topic("/prices/A APL").is_err()); // space
/// ```
pub fn validate_topic(topic: &str) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidName {
            name: topic.into(),
            reason,
        })
    };
    if !topic.starts_with('/') {
        return bad("a topic is a path that starts with '/'");
    }
    if topic.len() < 2 || topic.len() > TOPIC_MAX {
        return bad("a topic is 2 to 127 bytes long");
    }
    for seg in topic[1..].split('/') {
        if seg.is_empty() {
            return bad("a topic has no empty segment and no trailing '/'");
        }
        if seg == "." || seg == ".." {
            return bad("a topic segment cannot be '.' or '..'");
        }
        if !seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return bad("a topic may hold only ASCII letters, digits, '-', '_', '.' and '/'");
        }
    }
    Ok(())
}

/// Splits "market/prices/AAPL" into the region name "market" and the topic "/prices/AAPL",
/// checking both.
///
/// # Errors
/// [`Error::InvalidName`] when there is no topic part, or when either part is not a valid
/// region or topic name.
///
/// # Examples
/// ```
/// use weft::pubsub::split_uri;
/// assert_eq!(split_uri("market/prices/AAPL")?, ("market", "/prices/AAPL"));
/// assert!(split_uri("market").is_err());
/// # Ok::<(), weft::Error>(())
/// ```
pub fn split_uri(uri: &str) -> Result<(&str, &str)> {
    let uri = uri.strip_prefix('/').unwrap_or(uri);
    let Some(cut) = uri.find('/') else {
        return Err(Error::InvalidName {
            name: uri.into(),
            reason: "expected REGION/TOPIC, as in market/prices/AAPL",
        });
    };
    let (region, topic) = uri.split_at(cut);
    crate::sys::validate_name(region)?;
    validate_topic(topic)?;
    Ok((region, topic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_checked() {
        for good in [
            "/a",
            "/prices/AAPL",
            "/x.y/z-1/_",
            &format!("/{}", "a".repeat(126)),
        ] {
            validate_topic(good).unwrap();
        }
        for bad in [
            "",
            "/",
            "a/b",
            "/a/",
            "/a//b",
            "/a/../b",
            "/./a",
            "/a b",
            "/é",
            "/a\0",
            &format!("/{}", "a".repeat(127)),
        ] {
            assert!(validate_topic(bad).is_err(), "{bad:?} should be refused");
        }
    }

    /// A segment holds ASCII letters, digits, '-', '_' and '.' only: any other printable ASCII
    /// character is refused with the rule it broke, and a name that does not start with '/' is
    /// refused whatever follows its first byte.
    #[test]
    fn only_the_documented_characters_make_a_topic() {
        validate_topic("/Az09-_.x/y").unwrap();
        let chars = "a topic may hold only ASCII letters, digits, '-', '_', '.' and '/'";
        let rooted = "a topic is a path that starts with '/'";
        for (bad, rule) in [
            ("/a:b", chars),
            ("/a*b", chars),
            ("/a+b", chars),
            ("/a~b", chars),
            ("/a%20", chars),
            ("/a\\b", chars),
            ("/a!", chars),
            ("/a@b", chars),
            ("prices/AAPL", rooted),
            ("xa", rooted),
            ("p/q/r", rooted),
        ] {
            match validate_topic(bad) {
                Err(Error::InvalidName { name, reason }) => {
                    assert_eq!((name.as_str(), reason), (bad, rule));
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn uris_split_into_region_and_topic() {
        assert_eq!(
            split_uri("market/prices/AAPL").unwrap(),
            ("market", "/prices/AAPL")
        );
        assert_eq!(split_uri("/market/p").unwrap(), ("market", "/p"));
        assert!(split_uri("market").is_err());
        assert!(split_uri("market/").is_err());
        assert!(split_uri("ma rket/p").is_err());
    }
}
