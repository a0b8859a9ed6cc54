//! Sprig's crypto functions: here `derivePassword` (the Master Password algorithm: scrypt, then
//! HMAC-SHA256 picking template characters) and `encryptAES`/`decryptAES` (AES-256-CBC, PKCS#7
//! padding, random IV first, base64), exact; `bcrypt` and `htpasswd` in [`password`]; private
//! keys in [`keys`] and certificates in [`certificates`].

mod certificates;
mod keys;
mod password;

use aes::Aes256;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;

use super::{Registry, int_arg, text};
use crate::error::FuncError;
use crate::template::value::{Type, UintKind, Value};

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, key.len())
        .map_err(|e| e.to_string())
        .and_then(|params| scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string()));
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut message = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    message.extend_from_slice(&(site.len() as u32).to_be_bytes());
    message.extend_from_slice(site.as_bytes());
    message.extend_from_slice(&counter.to_be_bytes());
    let Ok(mut mac) = <Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            chars[usize::from(seed[i + 1]) % chars.len()] as char
        })
        .collect()
}

fn cipher(password: &str) -> Aes256 {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    Aes256::new(GenericArray::from_slice(&key))
}

fn encrypt_aes(password: &str, plaintext: &str) -> String {
    if plaintext.is_empty() {
        return String::new();
    }
    let cipher = cipher(password);
    let mut content = plaintext.as_bytes().to_vec();
    let padding = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(padding as u8, padding));
    let mut iv = [0u8; 16];
    rand::rng().fill_bytes(&mut iv);
    let mut out = iv.to_vec();
    let mut previous = iv;
    for chunk in content.chunks(16) {
        let mut block = GenericArray::clone_from_slice(chunk);
        block.iter_mut().zip(previous).for_each(|(b, p)| *b ^= p);
        cipher.encrypt_block(&mut block);
        previous.copy_from_slice(&block);
        out.extend_from_slice(&block);
    }
    STANDARD.encode(out)
}

fn decrypt_aes(password: &str, encrypted: &str) -> Result<String, FuncError> {
    if encrypted.is_empty() {
        return Ok(String::new());
    }
    let crypt = STANDARD.decode(encrypted).map_err(|e| FuncError::new(format!("illegal base64 data: {e}")))?;
    if crypt.len() < 16 {
        return Err(FuncError::new(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        )));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return Err(FuncError::new("crypto/cipher: input not full blocks"));
    }
    let cipher = cipher(password);
    let mut previous: [u8; 16] = iv.try_into().unwrap_or([0; 16]);
    let mut plain = Vec::with_capacity(body.len());
    for chunk in body.chunks(16) {
        let mut block = GenericArray::clone_from_slice(chunk);
        cipher.decrypt_block(&mut block);
        block.iter_mut().zip(previous).for_each(|(b, p)| *b ^= p);
        previous.copy_from_slice(chunk);
        plain.extend_from_slice(&block);
    }
    let padding = usize::from(plain.last().copied().unwrap_or(0));
    let end = plain.len().checked_sub(padding).ok_or_else(|| {
        FuncError::new(format!("runtime error: slice bounds out of range [:-{}]", padding - plain.len()))
    })?;
    Ok(String::from_utf8_lossy(&plain[..end]).into_owned())
}

pub(super) fn register(r: &mut Registry) {
    use Type::String as S;
    r.add("derivePassword", &[Type::Uint(UintKind::Uint32), S, S, S, S], S, |a| {
        Ok(Value::from(derive_password(int_arg(&a[0]) as u32, text(&a[1]), text(&a[2]), text(&a[3]), text(&a[4]))))
    });
    r.add("encryptAES", &[S, S], S, |a| Ok(Value::from(encrypt_aes(text(&a[0]), text(&a[1])))));
    r.add("decryptAES", &[S, S], S, |a| decrypt_aes(text(&a[0]), text(&a[1])).map(Value::from));
    password::register(r);
    certificates::register(r);
}
