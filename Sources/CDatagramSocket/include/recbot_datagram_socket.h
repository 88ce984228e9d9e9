#pragma once
// UDP sockets read with recvmmsg into caller-owned slots. Swift's Glibc module does not
// import recvmmsg or struct mmsghdr (they need _GNU_SOURCE), and the addresses are decoded
// here so the Swift side never touches sockaddr layouts.
#include <stddef.h>
#include <stdint.h>

/* A datagram's source (or a destination): family 4 or 6, the address in network order
   (4 or 16 bytes used), the port in host order. */
typedef struct recbot_datagram_address {
    uint8_t family;
    uint8_t truncated; /* set on a read when the datagram was larger than its slot */
    uint16_t port;
    uint8_t address[16];
} recbot_datagram_address;

/* Opens a UDP socket bound to `address` (family 4 or 6; its port, 0 for an ephemeral one),
   asks for a receive buffer of `receive_buffer_bytes`, and fills in the bound port. Returns
   the descriptor, or -errno. The socket blocks: reads wait on their own thread; sends pass
   MSG_DONTWAIT. */
int recbot_datagram_open(recbot_datagram_address *address, int receive_buffer_bytes);

/* Reads at least one datagram (waiting for it) and up to `count`, each into its slot of
   `slot_bytes` in `slots`, with its length and source. Returns how many, or -errno. */
int recbot_datagram_read(int fd, uint8_t *slots, size_t slot_bytes, unsigned count,
                         uint32_t *lengths, recbot_datagram_address *sources);

/* Sends one datagram without waiting. Returns 0, or -errno (EAGAIN: the send buffer is full). */
int recbot_datagram_send(int fd, const uint8_t *bytes, size_t length, const recbot_datagram_address *to);

/* The receive buffer the kernel granted (Linux reports twice the usable size), or -errno. */
int recbot_datagram_receive_buffer(int fd);

/* Wakes a thread blocked in recbot_datagram_read (it returns at once from then on). */
void recbot_datagram_stop_reading(int fd);

/* Names the calling thread (at most 15 bytes are kept) so `top -H` and perf show it. Foundation's
   Thread.name does not reach the kernel on Linux: the thread kept its creator's name. */
void recbot_name_current_thread(const char *name);

/* One classic BPF instruction, laid out as the kernel's struct sock_filter. */
typedef struct recbot_filter_instruction {
    uint16_t code;
    uint8_t jt;
    uint8_t jf;
    uint32_t k;
} recbot_filter_instruction;

/* Replaces the socket's filter with `program` (SO_ATTACH_FILTER; the kernel runs it on each
   datagram before queueing it, with the UDP header at offset 0), or removes it when `count` is
   0. Returns 0, or -errno (ENOMEM: larger than net.core.optmem_max allows). */
int recbot_datagram_set_filter(int fd, const recbot_filter_instruction *program, unsigned short count);
