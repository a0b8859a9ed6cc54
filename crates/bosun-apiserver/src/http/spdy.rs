//! The part of SPDY/3.1 that `kubectl port-forward` speaks: frames (data, SYN_STREAM,
//! SYN_REPLY, RST_STREAM, PING, GOAWAY; others are skipped) and the zlib-compressed header
//! blocks with the protocol's preset dictionary.
//!
//! Written by hand because kubectl still multiplexes port-forward streams with SPDY/3.1 (inside
//! a WebSocket since 1.31, as a plain HTTP upgrade before), and no maintained Rust crate speaks
//! it: HTTP/2 replaced SPDY everywhere else. Flow control is not enforced by kubectl's SPDY
//! library, so windows are not kept here either.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Why a frame or header block could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpdyError {
    /// A header block that does not inflate.
    #[error("SPDY header block: {0}")]
    Compression(String),
    /// A header block or frame that is cut short or malformed.
    #[error("SPDY: malformed {0}")]
    Malformed(&'static str),
}

/// The flag that ends a stream's side.
pub const FIN: u8 = 0x01;

/// A frame from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Bytes of a stream.
    Data {
        /// The stream.
        stream: u32,
        /// Whether the client's side ends with it.
        fin: bool,
        /// The bytes.
        data: Vec<u8>,
    },
    /// A new stream, with its compressed header block.
    SynStream {
        /// The stream.
        stream: u32,
        /// The compressed header block.
        headers: Vec<u8>,
    },
    /// A stream reset.
    Reset {
        /// The stream.
        stream: u32,
    },
    /// A ping to answer.
    Ping(u32),
    /// The client is done.
    GoAway,
    /// Anything else (SETTINGS, WINDOW_UPDATE, HEADERS): nothing to do.
    Other,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

// Control frame types.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;

/// Reads one frame from the front of `buffer`: the frame and how many bytes it took, or `None`
/// if the buffer does not hold a whole frame yet.
pub fn parse(buffer: &[u8]) -> Result<Option<(Frame, usize)>, SpdyError> {
    if buffer.len() < 8 {
        return Ok(None);
    }
    let length = (usize::from(buffer[5]) << 16) | (usize::from(buffer[6]) << 8) | usize::from(buffer[7]);
    let total = 8 + length;
    if buffer.len() < total {
        return Ok(None);
    }
    let flags = buffer[4];
    let payload = &buffer[8..total];
    let first = u32_at(buffer, 0);
    if first & 0x8000_0000 == 0 {
        let frame = Frame::Data { stream: first, fin: flags & FIN != 0, data: payload.to_vec() };
        return Ok(Some((frame, total)));
    }
    let kind = u16::from_be_bytes([buffer[2], buffer[3]]);
    let need = |n: usize, what| if payload.len() < n { Err(SpdyError::Malformed(what)) } else { Ok(()) };
    let frame = match kind {
        SYN_STREAM => {
            need(10, "SYN_STREAM")?;
            Frame::SynStream { stream: u32_at(payload, 0) & 0x7fff_ffff, headers: payload[10..].to_vec() }
        }
        RST_STREAM => {
            need(8, "RST_STREAM")?;
            Frame::Reset { stream: u32_at(payload, 0) & 0x7fff_ffff }
        }
        PING => {
            need(4, "PING")?;
            Frame::Ping(u32_at(payload, 0))
        }
        GOAWAY => Frame::GoAway,
        _ => Frame::Other,
    };
    Ok(Some((frame, total)))
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + payload.len());
    // The control bit, and version 3.
    frame.extend_from_slice(&0x8003u16.to_be_bytes());
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.push(flags);
    frame.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(0).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

/// A data frame.
pub fn data(stream: u32, fin: bool, bytes: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + bytes.len());
    frame.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    frame.push(if fin { FIN } else { 0 });
    frame.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(0).to_be_bytes()[1..]);
    frame.extend_from_slice(bytes);
    frame
}

/// The answer to a ping.
pub fn pong(id: u32) -> Vec<u8> {
    control(PING, 0, &id.to_be_bytes())
}

/// The frames data is sent in: at most the largest a frame holds.
pub const MAX_DATA: usize = (1 << 24) - 1;

/// The SPDY/3 header dictionary (draft 3, section 2.6.10.1): length-prefixed header names and
/// values, then common values as they are.
fn dictionary() -> Vec<u8> {
    const WORDS: [&str; 65] = [
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505\
        203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized\
        403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable\
        Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT\
        chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,\
        text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
    let mut out = Vec::new();
    for word in WORDS {
        out.extend_from_slice(&u32::try_from(word.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(word.as_bytes());
    }
    out.extend_from_slice(TAIL.as_bytes());
    out
}

/// Header names and values as a block: a count, then length-prefixed names and values.
fn header_block(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let length = |n: usize| u32::try_from(n).unwrap_or(0).to_be_bytes();
    out.extend_from_slice(&length(pairs.len()));
    for (name, value) in pairs {
        out.extend_from_slice(&length(name.len()));
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&length(value.len()));
        out.extend_from_slice(value.as_bytes());
    }
    out
}

fn read_header_block(block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
    let malformed = || SpdyError::Malformed("header block");
    let mut at = 0;
    let mut take = |n: usize| -> Result<&[u8], SpdyError> {
        let slice = block.get(at..at + n).ok_or_else(malformed)?;
        at += n;
        Ok(slice)
    };
    let count = u32::from_be_bytes(take(4)?.try_into().map_err(|_| malformed())?);
    let mut pairs = Vec::new();
    for _ in 0..count {
        let mut text = || -> Result<String, SpdyError> {
            let length = u32::from_be_bytes(take(4)?.try_into().map_err(|_| malformed())?);
            let bytes = take(usize::try_from(length).map_err(|_| malformed())?)?;
            Ok(String::from_utf8_lossy(bytes).into_owned())
        };
        let name = text()?;
        let value = text()?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// The header compression of one direction of a session: one zlib stream across all its
/// header blocks.
pub struct Headers {
    inflate: Decompress,
    deflate: Compress,
}

impl Default for Headers {
    fn default() -> Self {
        Headers { inflate: Decompress::new(true), deflate: Compress::new(Compression::default(), true) }
    }
}

impl Headers {
    /// Inflates and reads a client's header block.
    pub fn read(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
        let mut out = Vec::with_capacity(block.len() * 4 + 256);
        let mut input = block;
        loop {
            if out.capacity() - out.len() < 256 {
                out.reserve(4096);
            }
            let before = self.inflate.total_in();
            let result = self.inflate.decompress_vec(input, &mut out, FlushDecompress::Sync);
            let used = usize::try_from(self.inflate.total_in() - before).unwrap_or(input.len());
            input = &input[used.min(input.len())..];
            match result {
                Err(error) if error.needs_dictionary().is_some() => {
                    self.inflate.set_dictionary(&dictionary()).map_err(|e| SpdyError::Compression(e.to_string()))?;
                }
                Err(error) => return Err(SpdyError::Compression(error.to_string())),
                Ok(Status::StreamEnd) => break,
                Ok(_) if input.is_empty() && out.len() < out.capacity() => break,
                Ok(_) => {}
            }
        }
        read_header_block(&out)
    }

    /// Deflates a header block (no dictionary: the reader's zlib takes one only if asked).
    fn write(&mut self, pairs: &[(&str, &str)]) -> Vec<u8> {
        let block = header_block(pairs);
        let mut out = Vec::with_capacity(block.len() + 64);
        let before = self.deflate.total_in();
        loop {
            let done = usize::try_from(self.deflate.total_in() - before).unwrap_or(block.len());
            if out.capacity() - out.len() < 64 {
                out.reserve(256);
            }
            let _ = self.deflate.compress_vec(&block[done..], &mut out, FlushCompress::Sync);
            let done = usize::try_from(self.deflate.total_in() - before).unwrap_or(block.len());
            if done >= block.len() && out.len() < out.capacity() {
                return out;
            }
        }
    }

    /// The reply that accepts a stream.
    pub fn syn_reply(&mut self, stream: u32) -> Vec<u8> {
        let mut payload = (stream & 0x7fff_ffff).to_be_bytes().to_vec();
        payload.extend(self.write(&[]));
        control(SYN_REPLY, 0, &payload)
    }
}

/// A SYN_STREAM as a client sends it (for tests).
#[cfg(test)]
fn syn_stream(stream: u32, block: &[u8]) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    payload.extend_from_slice(block);
    control(SYN_STREAM, 0, &payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's compressor: zlib with the SPDY dictionary, as spdystream's.
    fn client_deflate() -> Compress {
        let mut deflate = Compress::new(Compression::best(), true);
        deflate.set_dictionary(&dictionary()).expect("dictionary");
        deflate
    }

    fn compress(deflate: &mut Compress, block: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(block.len() + 1024);
        deflate.compress_vec(block, &mut out, FlushCompress::Sync).expect("compress");
        out
    }

    #[test]
    fn the_dictionary_is_the_protocols() {
        let dictionary = dictionary();
        assert_eq!(dictionary.len(), 1423);
        assert_eq!(&dictionary[..11], b"\0\0\0\x07options");
        assert!(dictionary.ends_with(b"utf-,*,enq=0."));
    }

    #[test]
    fn frames_round_trip_and_wait_for_whole_frames() {
        let frame = data(3, true, b"hello");
        assert_eq!(parse(&frame[..7]), Ok(None));
        assert_eq!(parse(&frame[..12]), Ok(None));
        assert_eq!(parse(&frame), Ok(Some((Frame::Data { stream: 3, fin: true, data: b"hello".to_vec() }, 13))));
        assert_eq!(parse(&pong(7)), Ok(Some((Frame::Ping(7), 12))));
        let mut reset = control(RST_STREAM, 0, &5u32.to_be_bytes());
        reset.extend_from_slice(&[0, 0, 0, 5]);
        reset[7] = 8;
        assert_eq!(parse(&reset).map(|f| f.map(|(f, _)| f)), Ok(Some(Frame::Reset { stream: 5 })));
        let settings = control(4, 0, &[0, 0, 0, 0]);
        assert_eq!(parse(&settings), Ok(Some((Frame::Other, 12))));
    }

    #[test]
    fn header_blocks_inflate_across_frames_with_the_dictionary() {
        let mut client = client_deflate();
        let mut server = Headers::default();
        for (stream, kind) in [(1u32, "error"), (3, "data")] {
            let pairs = [("streamtype", kind), ("port", "8080"), ("requestid", "0")];
            let frame = syn_stream(stream, &compress(&mut client, &header_block(&pairs)));
            let Some((Frame::SynStream { stream: id, headers }, _)) = parse(&frame).expect("frame") else {
                panic!("not a SYN_STREAM")
            };
            assert_eq!(id, stream);
            let read = server.read(&headers).expect("headers");
            let expected: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            assert_eq!(read, expected);
        }
    }

    #[test]
    fn replies_carry_an_empty_header_block_a_client_can_inflate() {
        let mut server = Headers::default();
        let mut client = Decompress::new(true);
        for stream in [1u32, 3] {
            let reply = server.syn_reply(stream);
            assert_eq!(u16::from_be_bytes([reply[2], reply[3]]), SYN_REPLY);
            assert_eq!(u32_at(&reply, 8), stream);
            let mut out = Vec::with_capacity(64);
            client.decompress_vec(&reply[12..], &mut out, FlushDecompress::Sync).expect("inflate");
            assert_eq!(out, vec![0, 0, 0, 0]);
        }
    }
}
