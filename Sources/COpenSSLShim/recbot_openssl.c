#include "recbot_openssl.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

int recbot_make_certificate(EVP_PKEY **key, X509 **cert, const char *common_name, long validity_days) {
    *key = NULL;
    *cert = NULL;
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (pkey == NULL) return 0;
    X509 *x509 = X509_new();
    unsigned char serial[8];
    if (x509 == NULL || RAND_bytes(serial, sizeof serial) != 1) goto fail;
    serial[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (bn == NULL) goto fail;
    int ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x509)) != NULL;
    BN_free(bn);
    if (!ok) goto fail;
    if (X509_set_version(x509, 2) != 1) goto fail;
    if (X509_gmtime_adj(X509_getm_notBefore(x509), -86400) == NULL) goto fail;
    if (X509_gmtime_adj(X509_getm_notAfter(x509), validity_days * 86400) == NULL) goto fail;
    if (X509_set_pubkey(x509, pkey) != 1) goto fail;
    X509_NAME *name = X509_get_subject_name(x509);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0) != 1) goto fail;
    if (X509_set_issuer_name(x509, name) != 1) goto fail;
    if (X509_sign(x509, pkey, EVP_sha256()) == 0) goto fail;
    *key = pkey;
    *cert = x509;
    return 1;
fail:
    X509_free(x509);
    EVP_PKEY_free(pkey);
    return 0;
}

long recbot_dtls_timeout_ms(SSL *ssl) {
    struct timeval tv;
    if (DTLSv1_get_timeout(ssl, &tv) != 1) return -1;
    return (long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int recbot_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

void recbot_ssl_set_mtu(SSL *ssl, long mtu) {
    /* A fixed MTU: the BIO cannot discover the path MTU. */
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    SSL_set_mtu(ssl, mtu);
}

int recbot_ssl_ctx_use_dtls12(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) == 1 && SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) == 1;
}

void recbot_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
void recbot_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }

#include <pthread.h>

static int timeout_index = -1;
static pthread_once_t timeout_index_once = PTHREAD_ONCE_INIT;

static void allocate_timeout_index(void) {
    timeout_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static unsigned int timer_callback(SSL *ssl, unsigned int previous_us) {
    if (previous_us == 0) {
        unsigned int initial_ms = (unsigned int)(uintptr_t)SSL_get_ex_data(ssl, timeout_index);
        return (initial_ms == 0 ? 1000u : initial_ms) * 1000u;
    }
    unsigned long next = (unsigned long)previous_us * 2u;
    return next > 60000000ul ? 60000000u : (unsigned int)next;
}

void recbot_dtls_set_initial_timeout(SSL *ssl, unsigned int initial_ms) {
    pthread_once(&timeout_index_once, allocate_timeout_index);
    if (timeout_index < 0) return;
    SSL_set_ex_data(ssl, timeout_index, (void *)(uintptr_t)initial_ms);
    DTLS_set_timer_cb(ssl, timer_callback);
}

EVP_CIPHER_CTX *recbot_aes_gcm_context(const unsigned char *key) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, key, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int recbot_aes_gcm_open(EVP_CIPHER_CTX *ctx, const unsigned char *iv, const unsigned char *aad, int aad_length,
                        const unsigned char *aad2, int aad2_length, unsigned char *data, int length, const unsigned char *tag) {
    int written = 0;
    if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, iv) != 1) return 0;
    if (aad_length > 0 && EVP_DecryptUpdate(ctx, NULL, &written, aad, aad_length) != 1) return 0;
    if (aad2_length > 0 && EVP_DecryptUpdate(ctx, NULL, &written, aad2, aad2_length) != 1) return 0;
    if (length > 0 && EVP_DecryptUpdate(ctx, data, &written, data, length) != 1) return 0;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) != 1) return 0;
    unsigned char final_block[16];
    return EVP_DecryptFinal_ex(ctx, final_block, &written) == 1;
}

int recbot_aes128_encrypt_block(const unsigned char *key, const unsigned char *in, unsigned char *out) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int written = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL) == 1 && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
             EVP_EncryptUpdate(ctx, out, &written, in, 16) == 1 && written == 16;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}
