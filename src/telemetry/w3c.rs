//! The W3C Trace Context `traceparent` value (`00-<trace id>-<span id>-<flags>`): parsed by the
//! rules of the recommendation (lowercase hex, no all-zero ids, version `ff` refused, a later
//! version read for its first four fields) and written back as version `00`.

/// A parsed `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id (16 bytes, not all zero).
    pub trace_id: [u8; 16],
    /// The parent's span id (8 bytes, not all zero).
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

/// The length of a version-`00` `traceparent`.
pub const TRACEPARENT_LEN: usize = 55;

/// The `sampled` trace flag.
pub const FLAG_SAMPLED: u8 = 1;

impl TraceParent {
    /// Reads a `traceparent` value; `None` when it is not a valid one (the receiver then starts
    /// a new trace, as the recommendation says).
    pub fn parse(value: &str) -> Option<TraceParent> {
        let bytes = value.trim_matches([' ', '\t']).as_bytes();
        if bytes.len() < TRACEPARENT_LEN {
            return None;
        }
        let version = hex_byte(bytes[0], bytes[1])?;
        if version == 0xff || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        // Version 00 is exactly 55 characters; a later version may go on after a '-'.
        if (version == 0 && bytes.len() != TRACEPARENT_LEN)
            || (bytes.len() > TRACEPARENT_LEN && bytes[TRACEPARENT_LEN] != b'-')
        {
            return None;
        }
        let mut trace_id = [0u8; 16];
        hex_into(&bytes[3..35], &mut trace_id)?;
        let mut span_id = [0u8; 8];
        hex_into(&bytes[36..52], &mut span_id)?;
        let flags = hex_byte(bytes[53], bytes[54])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id, flags })
    }

    /// Whether the `sampled` flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & FLAG_SAMPLED != 0
    }

    /// Writes the version-`00` value into `out`, without allocating.
    pub fn write(&self, out: &mut [u8; TRACEPARENT_LEN]) {
        out[0] = b'0';
        out[1] = b'0';
        out[2] = b'-';
        write_hex(&self.trace_id, &mut out[3..35]);
        out[35] = b'-';
        write_hex(&self.span_id, &mut out[36..52]);
        out[52] = b'-';
        write_hex(&[self.flags], &mut out[53..55]);
    }

    /// The version-`00` value.
    pub fn format(&self) -> String {
        let mut out = [0u8; TRACEPARENT_LEN];
        self.write(&mut out);
        out.iter().map(|&b| b as char).collect()
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.format())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_hex(bytes: &[u8], out: &mut [u8]) {
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(hi: u8, lo: u8) -> Option<u8> {
    Some(nibble(hi)? << 4 | nibble(lo)?)
}

fn hex_into(text: &[u8], out: &mut [u8]) -> Option<()> {
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = hex_byte(text[2 * i], text[2 * i + 1])?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_recommendations_example_reads_and_writes_back() {
        let parent = TraceParent::parse(EXAMPLE).unwrap();
        assert_eq!(parent.trace_id[0], 0x4b);
        assert_eq!(parent.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert!(parent.sampled());
        assert_eq!(parent.format(), EXAMPLE);
        assert_eq!(parent.to_string(), EXAMPLE);
    }

    #[test]
    fn invalid_values_start_a_new_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_is_read_for_its_known_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes";
        let parent = TraceParent::parse(later).unwrap();
        assert!(!parent.sampled());
        assert_eq!(parent.format(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    }
}
