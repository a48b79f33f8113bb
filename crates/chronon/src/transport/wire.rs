//! A minimal byte encoding for what a worker process sends its parent at the end of a run
//! (no serde format in the engine's dependencies): little-endian integers, floats as their
//! bits (so every figure arrives exactly), strings as a length and UTF-8 bytes.

/// Appends values to a byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Reads values back in the order they were written; `None` when the bytes run out or are
/// not what was expected.
#[derive(Debug)]
pub(crate) struct Reader<'b> {
    bytes: &'b [u8],
}

impl<'b> Reader<'b> {
    pub(crate) fn new(bytes: &'b [u8]) -> Self {
        Reader { bytes }
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.bytes.split_at_checked(8)?;
        self.bytes = rest;
        Some(u64::from_le_bytes(head.try_into().ok()?))
    }
    pub(crate) fn f64(&mut self) -> Option<f64> {
        self.u64().map(f64::from_bits)
    }
    pub(crate) fn str(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        let (head, rest) = self.bytes.split_at_checked(n)?;
        self.bytes = rest;
        String::from_utf8(head.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_exactly_and_short_input_is_none() {
        let mut w = Writer::default();
        w.u64(7);
        w.f64(0.1 + 0.2);
        w.str("héllo");
        w.f64(f64::NAN);
        let mut r = Reader::new(&w.0);
        assert_eq!(r.u64(), Some(7));
        assert_eq!(r.f64(), Some(0.1 + 0.2));
        assert_eq!(r.str().as_deref(), Some("héllo"));
        assert!(r.f64().unwrap().is_nan());
        assert_eq!(r.u64(), None);
        assert_eq!(Reader::new(&w.0[..11]).str(), None);
    }
}
