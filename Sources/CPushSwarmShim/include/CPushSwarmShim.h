// The few system calls and libssl entry points Swift's Glibc module does not export cleanly:
// epoll (whose event struct is packed on x86_64), accept4, eventfd, and OpenSSL, whose useful
// calls are often macros. Thin wrappers only; all logic lives in Swift (PushSwarmNet).
#ifndef CPUSHSWARM_SHIM_H
#define CPUSHSWARM_SHIM_H

#include <stdint.h>
#include <stddef.h>

typedef struct ps_event {
    uint32_t events;
    uint64_t data;
} ps_event;

enum {
    PS_EPOLLIN = 0x001,
    PS_EPOLLOUT = 0x004,
    PS_EPOLLERR = 0x008,
    PS_EPOLLHUP = 0x010,
    PS_EPOLLRDHUP = 0x2000,
};

int ps_epoll_create(void);
/// op: 1 add, 2 delete, 3 modify (EPOLL_CTL_*).
int ps_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Waits for readiness for at most `timeout_ns` nanoseconds (epoll_pwait2, Linux 5.11), filling
/// `events` (at most `max`, 256 at most); on an older kernel the timeout is rounded up to whole
/// milliseconds, at most a second. The count, or -1 with errno set.
int ps_epoll_wait_ns(int epfd, ps_event *events, int max, int64_t timeout_ns);

int ps_eventfd(void);
int ps_eventfd_signal(int fd);
void ps_eventfd_drain(int fd);

/// A non-blocking, close-on-exec socket.
int ps_socket(int family, int type);
/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC; writes the peer's IPv4 address (host order) or 0.
int ps_accept(int fd, uint32_t *peer_ipv4);
/// Binds an IPv4 address and port (host order; port 0: any).
int ps_bind_ipv4(int fd, uint32_t address, uint16_t port);
int ps_connect_ipv4(int fd, uint32_t address, uint16_t port);
int ps_bind_ipv6_loopback(int fd, uint16_t port);
int ps_connect_ipv6(int fd, const uint8_t address[16], uint16_t port);
/// The locally bound port of a socket, or -1.
int ps_local_port(int fd);
/// SO_ERROR of a socket (the outcome of a non-blocking connect).
int ps_socket_error(int fd);
int ps_set_int_option(int fd, int level, int name, int value);
int ps_reuse_address(int fd);
int ps_reuse_port(int fd);
int ps_no_delay(int fd);
/// Sends with MSG_NOSIGNAL: a peer that went away is an error, never a SIGPIPE.
long ps_send(int fd, const void *buffer, size_t length);
/// Closes with SO_LINGER 0: the peer sees a reset (used by fault injection and tests).
int ps_reset(int fd);
void ps_ignore_sigpipe(void);
/// Raises the soft open-files limit to the hard one; returns the soft limit now in force.
long ps_raise_open_files_limit(void);

// TLS (libssl). Opaque pointers on the Swift side.
/// A client context: verify 1 checks the peer's chain and name; ca_file (may be NULL) adds
/// trusted roots to the system's.
void *ps_tls_client_context(int verify, const char *ca_file, char *error, size_t error_length);
void ps_tls_context_free(void *context);
/// A session over fd with SNI and host-name verification set for host_name.
void *ps_tls_session(void *context, int fd, const char *host_name, int verify);
void ps_tls_session_free(void *session);
/// Results: > 0 bytes / done; 0 closed cleanly; -1 want read; -2 want write; -3 error.
int ps_tls_handshake(void *session);
int ps_tls_read(void *session, void *buffer, int length);
int ps_tls_write(void *session, const void *buffer, int length);
/// The reason for the last failure on this session (certificate verification first).
void ps_tls_error(void *session, char *error, size_t error_length);

// TLS session resumption: a resumable session of a connection (a new reference, NULL when it has
// none yet: TLS 1.3 sends its tickets after the handshake), offered by a later connection, and
// whether a connection's handshake resumed one. ps_tls_protocol: 0x0303 TLS 1.2, 0x0304 TLS 1.3.
void *ps_tls_saved_session(void *session);
void ps_tls_saved_session_free(void *saved);
int ps_tls_offer_session(void *session, void *saved);
int ps_tls_resumed(void *session);
int ps_tls_protocol(void *session);
// ALPN (RFC 7301): ps_tls_set_alpn offers the protocols, in wire form (each a length octet and
// its name), before the handshake; ps_tls_alpn_selected copies the server's choice into out
// (at most capacity octets) and returns its length, 0 when the server chose none.
int ps_tls_set_alpn(void *session, const uint8_t *protocols, unsigned length);
// A server's context: its certificate chain and key (PEM files), TLS 1.2 and up, and ALPN that
// picks h2 when the client offers it, else http/1.1 (RFC 7301 section 3.2: no match, no ALPN
// answer). ps_tls_server_session: a session that accepts on an accepted socket.
void *ps_tls_server_context(const char *certificate_file, const char *key_file, char *error, size_t error_length);
void *ps_tls_server_session(void *context, int fd);
int ps_tls_alpn_selected(void *session, uint8_t *out, int capacity);

/// SHA-1 (the WebSocket handshake's Sec-WebSocket-Accept needs it) from libcrypto.
void ps_sha1(const void *data, size_t length, uint8_t out[20]);

/// SHA-256 from libcrypto's low-level calls (no EVP context or algorithm fetch per call; SHA-NI
/// where the CPU has it): SmartAppPush's event fingerprints and the mocks' derived identifiers.
void ps_sha256(const void *data, size_t length, uint8_t out[32]);

/// zlib's statuses that `ps_inflate_step` and `ps_inflate_reset` return (zlib.h's values).
enum { PS_Z_OK = 0, PS_Z_STREAM_END = 1, PS_Z_BUF_ERROR = -5 };

/// zlib's inflate over one gzip member at a time (access logs rotated as .gz), for a reader that
/// sees where each member ends and what follows it. NULL when zlib cannot start.
void *ps_inflate_open(void);
/// Inflates from `input` into `output`: zlib's status (Z_OK, Z_STREAM_END at a member's end,
/// Z_BUF_ERROR when it needs more input or room, or an error), with the bytes it took and gave.
int ps_inflate_step(void *stream, const uint8_t *input, unsigned input_length, uint8_t *output, unsigned output_length,
                    unsigned *consumed, unsigned *produced);
/// zlib's message for the last error, or "corrupt data".
const char *ps_inflate_error(void *stream);
/// Starts the next member.
int ps_inflate_reset(void *stream);
void ps_inflate_close(void *stream);

/// Asks the CPU to bring the cache line at `p` in while other work goes on (a hint: no fault, no
/// effect on what the program computes).
static inline void ps_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

#endif
