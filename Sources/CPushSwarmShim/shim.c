#define _GNU_SOURCE
// SHA256_Init/Update/Final are the low-level calls OpenSSL 3 marks deprecated in favour of
// EVP_Digest, which (like the one-shot SHA256()) fetches the algorithm per call; for the short
// inputs hashed here the low-level calls are several times cheaper.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CPushSwarmShim.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

int ps_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int ps_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

/* Copies the kernel's packed events into ps_event. */
static int ps_copy_events(struct epoll_event *raw, int count, ps_event *events) {
    for (int i = 0; i < count; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return count;
}

/* 1 once epoll_pwait2 answered ENOSYS (a kernel before 5.11): whole milliseconds from then on. */
static _Atomic int ps_no_pwait2 = 0;

int ps_epoll_wait_ns(int epfd, ps_event *events, int max, int64_t timeout_ns) {
    struct epoll_event raw[256];
    if (max > 256) max = 256;
    if (timeout_ns < 0) timeout_ns = 0;
    if (!ps_no_pwait2) {
        struct timespec timeout = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
        int count = epoll_pwait2(epfd, raw, max, &timeout, NULL);
        if (count >= 0 || errno != ENOSYS) return count < 0 ? count : ps_copy_events(raw, count, events);
        ps_no_pwait2 = 1;
    }
    /* Rounded up, so that a timer is never woken for early. */
    int64_t ms = (timeout_ns + 999999) / 1000000;
    return ps_copy_events(raw, epoll_wait(epfd, raw, max, ms > 1000 ? 1000 : (int)ms), events);
}

int ps_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int ps_eventfd_signal(int fd) {
    uint64_t one = 1;
    return (int)write(fd, &one, sizeof one);
}

void ps_eventfd_drain(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof value) > 0) {}
}

int ps_socket(int family, int type) { return socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

int ps_accept(int fd, uint32_t *peer_ipv4) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    int accepted = accept4(fd, (struct sockaddr *)&address, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (accepted >= 0 && peer_ipv4) {
        *peer_ipv4 = address.ss_family == AF_INET ? ntohl(((struct sockaddr_in *)&address)->sin_addr.s_addr) : 0;
    }
    return accepted;
}

static struct sockaddr_in ipv4(uint32_t address, uint16_t port) {
    struct sockaddr_in socket_address;
    memset(&socket_address, 0, sizeof socket_address);
    socket_address.sin_family = AF_INET;
    socket_address.sin_addr.s_addr = htonl(address);
    socket_address.sin_port = htons(port);
    return socket_address;
}

int ps_bind_ipv4(int fd, uint32_t address, uint16_t port) {
    struct sockaddr_in socket_address = ipv4(address, port);
    return bind(fd, (struct sockaddr *)&socket_address, sizeof socket_address);
}

int ps_connect_ipv4(int fd, uint32_t address, uint16_t port) {
    struct sockaddr_in socket_address = ipv4(address, port);
    return connect(fd, (struct sockaddr *)&socket_address, sizeof socket_address);
}

int ps_bind_ipv6_loopback(int fd, uint16_t port) {
    struct sockaddr_in6 socket_address;
    memset(&socket_address, 0, sizeof socket_address);
    socket_address.sin6_family = AF_INET6;
    socket_address.sin6_addr = in6addr_loopback;
    socket_address.sin6_port = htons(port);
    return bind(fd, (struct sockaddr *)&socket_address, sizeof socket_address);
}

int ps_connect_ipv6(int fd, const uint8_t address[16], uint16_t port) {
    struct sockaddr_in6 socket_address;
    memset(&socket_address, 0, sizeof socket_address);
    socket_address.sin6_family = AF_INET6;
    memcpy(&socket_address.sin6_addr, address, 16);
    socket_address.sin6_port = htons(port);
    return connect(fd, (struct sockaddr *)&socket_address, sizeof socket_address);
}

int ps_local_port(int fd) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0) return -1;
    if (address.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    return -1;
}

int ps_socket_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
    return error;
}

int ps_set_int_option(int fd, int level, int name, int value) {
    return setsockopt(fd, level, name, &value, sizeof value);
}

int ps_reuse_address(int fd) { return ps_set_int_option(fd, SOL_SOCKET, SO_REUSEADDR, 1); }
int ps_reuse_port(int fd) { return ps_set_int_option(fd, SOL_SOCKET, SO_REUSEPORT, 1); }
int ps_no_delay(int fd) { return ps_set_int_option(fd, IPPROTO_TCP, TCP_NODELAY, 1); }

long ps_send(int fd, const void *buffer, size_t length) { return send(fd, buffer, length, MSG_NOSIGNAL); }

int ps_reset(int fd) {
    struct linger linger = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, sizeof linger);
    return close(fd);
}

void ps_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

long ps_raise_open_files_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return (long)limit.rlim_cur;
}

static void last_ssl_error(char *error, size_t error_length) {
    unsigned long code = ERR_get_error();
    if (code == 0) {
        snprintf(error, error_length, "%s", errno ? strerror(errno) : "unknown TLS error");
    } else {
        ERR_error_string_n(code, error, error_length);
    }
    ERR_clear_error();
}

void *ps_tls_client_context(int verify, const char *ca_file, char *error, size_t error_length) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) {
        last_ssl_error(error, error_length);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (verify) {
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_default_verify_paths(context);
        if (ca_file && SSL_CTX_load_verify_locations(context, ca_file, NULL) != 1) {
            last_ssl_error(error, error_length);
            SSL_CTX_free(context);
            return NULL;
        }
    } else {
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, NULL);
    }
    return context;
}

void ps_tls_context_free(void *context) { SSL_CTX_free((SSL_CTX *)context); }

void *ps_tls_session(void *context, int fd, const char *host_name, int verify) {
    SSL *ssl = SSL_new((SSL_CTX *)context);
    if (!ssl) return NULL;
    SSL_set_fd(ssl, fd);
    SSL_set_connect_state(ssl);
    if (host_name && host_name[0]) {
        SSL_set_tlsext_host_name(ssl, host_name);
        if (verify) SSL_set1_host(ssl, host_name);
    }
    return ssl;
}

void ps_tls_session_free(void *session) { SSL_free((SSL *)session); }

static int outcome(SSL *ssl, int result) {
    if (result > 0) return result;
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ: return -1;
    case SSL_ERROR_WANT_WRITE: return -2;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: return -3;
    }
}

int ps_tls_handshake(void *session) {
    SSL *ssl = (SSL *)session;
    int result = SSL_do_handshake(ssl);
    return result == 1 ? 1 : outcome(ssl, result);
}

int ps_tls_read(void *session, void *buffer, int length) {
    SSL *ssl = (SSL *)session;
    return outcome(ssl, SSL_read(ssl, buffer, length));
}

int ps_tls_write(void *session, const void *buffer, int length) {
    SSL *ssl = (SSL *)session;
    return outcome(ssl, SSL_write(ssl, buffer, length));
}

void ps_tls_error(void *session, char *error, size_t error_length) {
    SSL *ssl = (SSL *)session;
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK && SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE) {
        snprintf(error, error_length, "certificate verification failed: %s", X509_verify_cert_error_string(verify));
        ERR_clear_error();
        return;
    }
    last_ssl_error(error, error_length);
}

// Saved and offered as copies: libssl marks a connection's session not resumable when the
// connection is freed without a TLS shutdown (as a suspended app's is), and a session shared
// with the saved one would take the mark with it.
void *ps_tls_saved_session(void *session) {
    SSL_SESSION *current = SSL_get0_session((SSL *)session);
    if (!current || !SSL_SESSION_is_resumable(current)) return NULL;
    return SSL_SESSION_dup(current);
}

void ps_tls_saved_session_free(void *saved) { SSL_SESSION_free((SSL_SESSION *)saved); }

int ps_tls_offer_session(void *session, void *saved) {
    SSL_SESSION *copy = SSL_SESSION_dup((SSL_SESSION *)saved);
    if (!copy) return 0;
    int result = SSL_set_session((SSL *)session, copy);
    SSL_SESSION_free(copy);
    return result;
}

int ps_tls_resumed(void *session) { return SSL_session_reused((SSL *)session); }

int ps_tls_protocol(void *session) { return SSL_version((SSL *)session); }

int ps_tls_set_alpn(void *session, const uint8_t *protocols, unsigned length) {
    // SSL_set_alpn_protos returns 0 on success (unlike most of libssl).
    return SSL_set_alpn_protos((SSL *)session, protocols, length) == 0 ? 1 : 0;
}

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *out_length, const unsigned char *offered,
                       unsigned int offered_length, void *argument) {
    (void)ssl;
    (void)argument;
    static const unsigned char preferred[] = "\x02h2\x08http/1.1";
    unsigned char *chosen = NULL;
    if (SSL_select_next_proto(&chosen, out_length, preferred, sizeof(preferred) - 1, offered, offered_length) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

void *ps_tls_server_context(const char *certificate_file, const char *key_file, char *error, size_t error_length) {
    SSL_CTX *context = SSL_CTX_new(TLS_server_method());
    if (!context) {
        last_ssl_error(error, error_length);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_use_certificate_chain_file(context, certificate_file) != 1 || SSL_CTX_use_PrivateKey_file(context, key_file, SSL_FILETYPE_PEM) != 1
        || SSL_CTX_check_private_key(context) != 1) {
        last_ssl_error(error, error_length);
        SSL_CTX_free(context);
        return NULL;
    }
    SSL_CTX_set_alpn_select_cb(context, select_alpn, NULL);
    return context;
}

void *ps_tls_server_session(void *context, int fd) {
    SSL *ssl = SSL_new((SSL_CTX *)context);
    if (!ssl) return NULL;
    SSL_set_fd(ssl, fd);
    SSL_set_accept_state(ssl);
    return ssl;
}

int ps_tls_alpn_selected(void *session, uint8_t *out, int capacity) {
    const unsigned char *selected = NULL;
    unsigned length = 0;
    SSL_get0_alpn_selected((SSL *)session, &selected, &length);
    if (!selected || length == 0) return 0;
    if ((int)length > capacity) length = (unsigned)capacity;
    memcpy(out, selected, length);
    return (int)length;
}

void ps_sha1(const void *data, size_t length, uint8_t out[20]) {
    unsigned int written = 20;
    EVP_Digest(data, length, out, &written, EVP_sha1(), NULL);
}

void ps_sha256(const void *data, size_t length, uint8_t out[32]) {
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(out, &context);
}

void *ps_inflate_open(void) {
    z_stream *stream = calloc(1, sizeof(z_stream));
    if (stream == NULL) return NULL;
    // 15 + 16: a gzip header and trailer around deflate data.
    if (inflateInit2(stream, 15 + 16) != Z_OK) {
        free(stream);
        return NULL;
    }
    return stream;
}

int ps_inflate_step(void *stream, const uint8_t *input, unsigned input_length, uint8_t *output, unsigned output_length,
                    unsigned *consumed, unsigned *produced) {
    z_stream *z = stream;
    z->next_in = (Bytef *)input;
    z->avail_in = input_length;
    z->next_out = output;
    z->avail_out = output_length;
    int status = inflate(z, Z_NO_FLUSH);
    *consumed = input_length - z->avail_in;
    *produced = output_length - z->avail_out;
    return status;
}

const char *ps_inflate_error(void *stream) {
    z_stream *z = stream;
    return z->msg != NULL ? z->msg : "corrupt data";
}

int ps_inflate_reset(void *stream) { return inflateReset((z_stream *)stream); }

void ps_inflate_close(void *stream) {
    inflateEnd((z_stream *)stream);
    free(stream);
}
