#pragma once
// Wrappers for OpenSSL macros and variadic calls that Swift cannot import,
// plus the self-signed certificate recbot presents in DTLS.
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* Creates an ECDSA P-256 key and a self-signed certificate valid from a day ago for
   `validity_days`. Returns 1 on success; on failure *key and *cert are NULL. */
int recbot_make_certificate(EVP_PKEY **key, X509 **cert, const char *common_name, long validity_days);

/* DTLS retransmission timer: milliseconds until it fires, or -1 when not running. */
long recbot_dtls_timeout_ms(SSL *ssl);
/* Fires the DTLS timer: 1 = retransmitted, 0 = nothing to do, -1 = too many retransmissions. */
int recbot_dtls_handle_timeout(SSL *ssl);

/* Fixes the DTLS MTU (and turns off MTU discovery, which a memory BIO cannot do). */
void recbot_ssl_set_mtu(SSL *ssl, long mtu);
int recbot_ssl_ctx_use_dtls12(SSL_CTX *ctx);
void recbot_bio_set_retry_read(BIO *bio);
void recbot_bio_clear_retry_flags(BIO *bio);

/* Sets the first DTLS retransmission timeout (doubling up to 60 s after that).
   OpenSSL's default is 1 s (RFC 6347); tests shorten it. */
void recbot_dtls_set_initial_timeout(SSL *ssl, unsigned int initial_ms);

/* AES-128-GCM open with a context keyed once (EVP_DecryptInit_ex with the key, no IV) and
   reused for every packet: only the 12-byte IV changes. Decrypts `length` bytes of `data` in
   place after authenticating `aad` then `aad2` (either may be empty); 1 when the 16-byte `tag`
   matches, 0 otherwise (then `data` holds garbage the caller must not use). */
int recbot_aes_gcm_open(EVP_CIPHER_CTX *ctx, const unsigned char *iv, const unsigned char *aad, int aad_length,
                        const unsigned char *aad2, int aad2_length, unsigned char *data, int length, const unsigned char *tag);
/* A context for recbot_aes_gcm_open, keyed with a 16-byte key; NULL on failure. */
EVP_CIPHER_CTX *recbot_aes_gcm_context(const unsigned char *key);
/* One AES-128 block: out = E(key, in). 1 on success. */
int recbot_aes128_encrypt_block(const unsigned char *key, const unsigned char *in, unsigned char *out);
