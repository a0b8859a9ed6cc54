//! The protobuf wire format: tags, varints, fixed-width numbers and length-delimited bytes.

use super::ProtobufError;

/// How a field's value is laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (8 bytes, little-endian).
    Fixed64(u64),
    /// Wire type 2: strings, bytes, messages, packed lists.
    Bytes(&'a [u8]),
    /// Wire type 5 (4 bytes, little-endian).
    Fixed32(u32),
}

/// Reads the fields of one message in wire order.
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// The fields of a message's encoding.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], ProtobufError> {
        if self.rest.len() < count {
            return Err(ProtobufError::Truncated);
        }
        let (head, tail) = self.rest.split_at(count);
        self.rest = tail;
        Ok(head)
    }
}

/// Reads a varint from the front of `bytes`; returns it and the bytes after it.
pub fn varint(bytes: &[u8]) -> Result<(u64, &[u8]), ProtobufError> {
    let mut value = 0u64;
    for (index, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Ok((value, &bytes[index + 1..]));
        }
    }
    Err(if bytes.len() < 10 { ProtobufError::Truncated } else { ProtobufError::Malformed("varint too long".into()) })
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, WireValue<'a>), ProtobufError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let field = (|| {
            let (key, rest) = varint(self.rest)?;
            self.rest = rest;
            let number = u32::try_from(key >> 3).map_err(|_| ProtobufError::Malformed("field number".into()))?;
            let value = match key & 7 {
                0 => {
                    let (value, rest) = varint(self.rest)?;
                    self.rest = rest;
                    WireValue::Varint(value)
                }
                1 => WireValue::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes taken"))),
                2 => {
                    let (length, rest) = varint(self.rest)?;
                    self.rest = rest;
                    let length = usize::try_from(length).map_err(|_| ProtobufError::Truncated)?;
                    WireValue::Bytes(self.take(length)?)
                }
                5 => WireValue::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes taken"))),
                other => return Err(ProtobufError::Malformed(format!("wire type {other} of field {number}"))),
            };
            Ok((number, value))
        })();
        if field.is_err() {
            self.rest = &[];
        }
        Some(field)
    }
}

/// Writes a message's fields in the wire format.
#[derive(Debug, Default)]
pub struct Encoder {
    bytes: Vec<u8>,
}

impl Encoder {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    fn key(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    /// A length-delimited field (string, bytes, message).
    pub fn bytes(&mut self, field: u32, value: &[u8]) {
        self.key(field, 2);
        self.varint(value.len() as u64);
        self.bytes.extend_from_slice(value);
    }

    /// A string field.
    pub fn string(&mut self, field: u32, value: &str) {
        self.bytes(field, value.as_bytes());
    }

    /// A nested message.
    pub fn message(&mut self, field: u32, message: Encoder) {
        self.bytes(field, &message.bytes);
    }

    /// A bool, int32 or int64 field (negative numbers as ten-byte varints, as protobuf does).
    pub fn int(&mut self, field: u32, value: i64) {
        self.key(field, 0);
        self.varint(value as u64);
    }

    /// A double field.
    pub fn double(&mut self, field: u32, value: f64) {
        self.key(field, 1);
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    /// The encoded message.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_with_their_wire_types() {
        // 1: varint 150, 2: "hi", 3: fixed64 1, 4: fixed32 2
        let bytes = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0, 0];
        let fields: Vec<_> = Fields::new(&bytes).collect::<Result<_, _>>().expect("valid");
        assert_eq!(
            fields,
            [
                (1, WireValue::Varint(150)),
                (2, WireValue::Bytes(b"hi")),
                (3, WireValue::Fixed64(1)),
                (4, WireValue::Fixed32(2))
            ]
        );
    }

    #[test]
    fn truncated_and_malformed_input_is_an_error() {
        let cases: [&[u8]; 4] = [&[0x12, 0x05, b'a'], &[0x08], &[0x08, 0x80], &[0x0b]];
        for bytes in cases {
            let result: Result<Vec<_>, _> = Fields::new(bytes).collect();
            assert!(result.is_err(), "{bytes:?}");
        }
    }
}
