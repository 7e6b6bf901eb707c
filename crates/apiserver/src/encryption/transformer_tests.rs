//! Fixed vectors: computed independently from the algorithm definitions
//! (AES-CBC with PKCS#7 and AES-GCM by another implementation; XSalsa20 +
//! Poly1305 from their specifications, checked against the test vector of
//! "Cryptography in NaCl", section 10), so that bytes kube-apiserver wrote
//! read here and the other way round.

use super::*;

const PLAIN: &[u8] = br#"{"kind":"Secret","apiVersion":"v1","data":{"k":"dg=="}}"#;
const KEY_AD: &[u8] = b"/registry/secrets/default/s1";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn key(n: u8) -> Vec<u8> {
    (0..n).collect()
}

#[test]
fn aescbc_reads_fixed_vectors_for_every_key_size() {
    let vectors = [
        (16, "6465666768696a6b6c6d6e6f7071727384dae64f6f36421d0828c8a3d20c4f273b1adaec31449757ae9c76253433d62b05e1ef6227bc10262a81d0b720532e63f373f16e6d4721d28db6e8d6aa45d7be"),
        (24, "6465666768696a6b6c6d6e6f7071727352efc26e767f4d8852369f65ebadc68c4b4510ced397d393e20ae4d9b02910f12a26ee180e392aa9410e6702e72f2b8f695de8b5cf3a7fd52e4922ae40d97a08"),
        (32, "6465666768696a6b6c6d6e6f7071727344283a8a80a45cba29966b60a5c5bdab29df94c4e216912e2dd214420707bf0d91d3bfb1e07aa102f061cea89afb0ab8808eebcc61db05be7be0e5ed9c4f8908"),
    ];
    for (size, v) in vectors {
        let t = AesCbc::new(&key(size)).unwrap();
        assert_eq!(t.from_storage(&hex(v), KEY_AD).unwrap(), (PLAIN.to_vec(), false), "key size {size}");
    }
}

#[test]
fn aescbc_writes_a_random_iv_then_padded_blocks_and_round_trips() {
    let t = AesCbc::new(&key(32)).unwrap();
    let a = t.to_storage(PLAIN, KEY_AD).unwrap();
    let b = t.to_storage(PLAIN, KEY_AD).unwrap();
    // 16-byte IV + the plaintext padded to the next multiple of 16 (55 → 64).
    assert_eq!(a.len(), 16 + 64);
    assert_ne!(a[..16], b[..16], "a fresh IV per write");
    assert_eq!(t.from_storage(&a, b"other key: not authenticated").unwrap().0, PLAIN);
    // A plaintext of whole blocks gets a whole block of padding.
    let sixteen = t.to_storage(&[7u8; 16], KEY_AD).unwrap();
    assert_eq!(sixteen.len(), 16 + 32);
    assert_eq!(t.from_storage(&sixteen, KEY_AD).unwrap().0, vec![7u8; 16]);
    assert_eq!(t.from_storage(&t.to_storage(b"", KEY_AD).unwrap(), KEY_AD).unwrap().0, b"");
}

#[test]
fn aescbc_refuses_short_ragged_and_badly_padded_data_with_upstream_messages() {
    let t = AesCbc::new(&key(16)).unwrap();
    assert_eq!(t.from_storage(&[0u8; 15], KEY_AD).unwrap_err(), "the stored data was shorter than the required size");
    assert_eq!(t.from_storage(&[0u8; 33], KEY_AD).unwrap_err(), "the stored data is not a multiple of the block size");
    // The right format under another key decrypts to garbage padding.
    let other = AesCbc::new(&key(32)).unwrap().to_storage(PLAIN, KEY_AD).unwrap();
    let err = t.from_storage(&other, KEY_AD).unwrap_err();
    assert!(err == "invalid PKCS7 data (empty or not padded)" || err == "invalid padding on input", "{err}");
}

#[test]
fn aesgcm_reads_fixed_vectors_with_the_storage_key_as_authenticated_data() {
    let vectors = [
        (16, "c8c9cacbcccdcecfd0d1d2d34d0affd760570913fcc4cd21b30417845c329c79b8797861a7de28a634c5d3b3cf18ba3ff0ebff54ca8c5374684e61b17d2a859d6dc1be5f9df49b918061f2c4f92d5887ed8ca2"),
        (24, "c8c9cacbcccdcecfd0d1d2d3c2a47741f872728e3e7f739437b6f6941bda03882a1772cbe0464478e46077900fbf8bfd20ecd52431d009198a4127a70249d81ee6ba160ff5580e77b897ae1fb2d876fa7b84e8"),
        (32, "c8c9cacbcccdcecfd0d1d2d36a5a0ab2e8a8d91a566f7add6c639f36cca58dd86d3dcd569ec0548ff8ab899ffdae0684f67e5ecb10c53f85db353bc2bbd62685a6708a5371cd0f415a696b41dd17f73c1649ba"),
    ];
    for (size, v) in vectors {
        let t = AesGcm::new(&key(size)).unwrap();
        assert_eq!(t.from_storage(&hex(v), KEY_AD).unwrap(), (PLAIN.to_vec(), false), "key size {size}");
        // The same bytes under another key path fail authentication: a
        // value copied to another object's key does not read.
        let err = t.from_storage(&hex(v), b"/registry/secrets/default/s2").unwrap_err();
        assert_eq!(err, "cipher: message authentication failed");
    }
}

#[test]
fn aesgcm_writes_a_random_nonce_then_ciphertext_and_tag() {
    let t = AesGcm::new(&key(32)).unwrap();
    let a = t.to_storage(PLAIN, KEY_AD).unwrap();
    assert_eq!(a.len(), 12 + PLAIN.len() + 16);
    assert_ne!(a[..12], t.to_storage(PLAIN, KEY_AD).unwrap()[..12]);
    assert_eq!(t.from_storage(&a, KEY_AD).unwrap().0, PLAIN);
    assert_eq!(t.from_storage(&a[..11], KEY_AD).unwrap_err(), "the stored data was shorter than the required size");
}

#[test]
fn secretbox_matches_the_nacl_paper_vector_and_a_fixed_vector() {
    // "Cryptography in NaCl", section 10: firstkey, nonce, m → c.
    let firstkey: [u8; 32] =
        hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389").try_into().unwrap();
    let nonce = hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37");
    let m = hex("be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705");
    let c = hex("f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5");
    let t = Secretbox::new(&firstkey);
    let stored = [nonce.clone(), c].concat();
    assert_eq!(t.from_storage(&stored, KEY_AD).unwrap().0, m);

    let t = Secretbox::new(&key(32).try_into().unwrap());
    let v = hex("32333435363738393a3b3c3d3e3f40414243444546474849950a21d67d03d9d59a696b8d8e57280755263a9797afd05c400464c9d2fdb65408242c48e6b41f49e8f0b39ac934cd551f4a2c5672d65f16e27da9d86c6018d20ba5a13d80fd97");
    assert_eq!(t.from_storage(&v, KEY_AD).unwrap().0, PLAIN);
    let w = t.to_storage(PLAIN, KEY_AD).unwrap();
    assert_eq!(w.len(), 24 + 16 + PLAIN.len());
    assert_eq!(t.from_storage(&w, b"secretbox authenticates no context").unwrap().0, PLAIN);
    let mut tampered = w.clone();
    *tampered.last_mut().unwrap() ^= 1;
    assert_eq!(t.from_storage(&tampered, KEY_AD).unwrap_err(), "output array was not large enough for encryption");
    assert_eq!(t.from_storage(&w[..39], KEY_AD).unwrap_err(), "the stored data was shorter than the required size");
}

#[test]
fn identity_passes_plain_bytes_and_refuses_encrypted_ones() {
    assert_eq!(Identity.to_storage(PLAIN, KEY_AD).unwrap(), PLAIN);
    assert_eq!(Identity.from_storage(PLAIN, KEY_AD).unwrap(), (PLAIN.to_vec(), false));
    assert_eq!(Identity.from_storage(b"k8s:enc:aescbc:v1:key1:xyz", KEY_AD).unwrap_err(), IDENTITY_READ_ENCRYPTED);
}

fn keyed(names: &[(&str, u8)]) -> PrefixTransformers {
    let list = names
        .iter()
        .map(|(n, seed)| {
            let k: Vec<u8> = (0..32).map(|i| i ^ seed).collect();
            (format!("{n}:").into_bytes(), Box::new(AesCbc::new(&k).unwrap()) as Box<dyn Transformer>)
        })
        .collect();
    PrefixTransformers::new(list, "no matching key was found for the provided AES transformer")
}

fn provider(keys: PrefixTransformers, identity_too: bool) -> PrefixTransformers {
    let mut list: Vec<(Vec<u8>, Box<dyn Transformer>)> = vec![(b"k8s:enc:aescbc:v1:".to_vec(), Box::new(keys))];
    if identity_too {
        list.push((Vec::new(), Box::new(Identity)));
    }
    PrefixTransformers::new(list, "no matching prefix found")
}

#[test]
fn writes_carry_the_provider_and_key_prefix_of_the_first_key() {
    let t = provider(keyed(&[("key1", 1), ("key2", 2)]), false);
    let stored = t.to_storage(PLAIN, KEY_AD).unwrap();
    assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"), "{:?}", String::from_utf8_lossy(&stored[..24]));
    assert_eq!(t.from_storage(&stored, KEY_AD).unwrap(), (PLAIN.to_vec(), false));
}

#[test]
fn rotation_reads_old_keys_as_stale_and_writes_the_new_first_key() {
    let before = provider(keyed(&[("key1", 1)]), false);
    let old = before.to_storage(PLAIN, KEY_AD).unwrap();
    // New key first, old key second: old data still reads, marked stale.
    let after = provider(keyed(&[("key2", 2), ("key1", 1)]), false);
    assert_eq!(after.from_storage(&old, KEY_AD).unwrap(), (PLAIN.to_vec(), true));
    let new = after.to_storage(PLAIN, KEY_AD).unwrap();
    assert!(new.starts_with(b"k8s:enc:aescbc:v1:key2:"));
    assert_eq!(after.from_storage(&new, KEY_AD).unwrap(), (PLAIN.to_vec(), false));
    // Once the old key is removed, its data no longer reads.
    let only_new = provider(keyed(&[("key2", 2)]), true);
    assert_eq!(
        only_new.from_storage(&old, KEY_AD).unwrap_err(),
        "no matching key was found for the provided AES transformer"
    );
}

#[test]
fn identity_after_a_provider_reads_plain_data_as_stale_and_identity_first_reads_encrypted_data() {
    let encrypting = provider(keyed(&[("key1", 1)]), true);
    assert_eq!(encrypting.from_storage(PLAIN, KEY_AD).unwrap(), (PLAIN.to_vec(), true));
    let sealed = encrypting.to_storage(PLAIN, KEY_AD).unwrap();
    // identity first (decrypting everything back), the old provider after.
    let list: Vec<(Vec<u8>, Box<dyn Transformer>)> =
        vec![(Vec::new(), Box::new(Identity)), (b"k8s:enc:aescbc:v1:".to_vec(), Box::new(keyed(&[("key1", 1)])))];
    let decrypting = PrefixTransformers::new(list, "no matching prefix found");
    assert_eq!(decrypting.from_storage(&sealed, KEY_AD).unwrap(), (PLAIN.to_vec(), true));
    assert_eq!(decrypting.to_storage(PLAIN, KEY_AD).unwrap(), PLAIN);
    // Plain data without identity configured matches no prefix.
    let strict = provider(keyed(&[("key1", 1)]), false);
    assert_eq!(strict.from_storage(PLAIN, KEY_AD).unwrap_err(), "no matching prefix found");
}
