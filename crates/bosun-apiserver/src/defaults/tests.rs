//! The defaults checked against what a real API server stores: each fixture under
//! `tests/upstream/defaults` is a manifest and the object upstream stores for it (written from
//! upstream's defaulting code, registry strategies and Go's encoding rules).
