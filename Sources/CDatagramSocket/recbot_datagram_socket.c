#define _GNU_SOURCE
#include "recbot_datagram_socket.h"

#include <errno.h>
#include <linux/filter.h>
#include <pthread.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum { max_batch = 64 };

static socklen_t to_sockaddr(const recbot_datagram_address *from, struct sockaddr_storage *storage) {
    memset(storage, 0, sizeof *storage);
    if (from->family == 4) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)storage;
        v4->sin_family = AF_INET;
        v4->sin_port = htons(from->port);
        memcpy(&v4->sin_addr, from->address, 4);
        return sizeof *v4;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)storage;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(from->port);
    memcpy(&v6->sin6_addr, from->address, 16);
    return sizeof *v6;
}

static void from_sockaddr(const struct sockaddr_storage *storage, recbot_datagram_address *to) {
    if (storage->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)storage;
        to->family = 4;
        to->port = ntohs(v4->sin_port);
        memcpy(to->address, &v4->sin_addr, 4);
    } else if (storage->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)storage;
        to->family = 6;
        to->port = ntohs(v6->sin6_port);
        memcpy(to->address, &v6->sin6_addr, 16);
    } else {
        to->family = 0;
        to->port = 0;
    }
}

int recbot_datagram_open(recbot_datagram_address *address, int receive_buffer_bytes) {
    if (address->family != 4 && address->family != 6) return -EAFNOSUPPORT;
    int fd = socket(address->family == 4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    struct sockaddr_storage storage;
    socklen_t length = to_sockaddr(address, &storage);
    /* A smaller grant than asked (net.core.rmem_max) is not an error. */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
    if (bind(fd, (struct sockaddr *)&storage, length) != 0 || getsockname(fd, (struct sockaddr *)&storage, &length) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    from_sockaddr(&storage, address);
    return fd;
}

int recbot_datagram_read(int fd, uint8_t *slots, size_t slot_bytes, unsigned count,
                         uint32_t *lengths, recbot_datagram_address *sources) {
    if (count > max_batch) count = max_batch;
    struct mmsghdr messages[max_batch];
    struct iovec vectors[max_batch];
    struct sockaddr_storage addresses[max_batch];
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned index = 0; index < count; index++) {
        vectors[index].iov_base = slots + index * slot_bytes;
        vectors[index].iov_len = slot_bytes;
        messages[index].msg_hdr.msg_iov = &vectors[index];
        messages[index].msg_hdr.msg_iovlen = 1;
        messages[index].msg_hdr.msg_name = &addresses[index];
        messages[index].msg_hdr.msg_namelen = sizeof addresses[index];
    }
    int received = recvmmsg(fd, messages, count, MSG_WAITFORONE, NULL);
    if (received < 0) return -errno;
    for (int index = 0; index < received; index++) {
        lengths[index] = messages[index].msg_len;
        from_sockaddr(&addresses[index], &sources[index]);
        sources[index].truncated = (messages[index].msg_hdr.msg_flags & MSG_TRUNC) != 0;
    }
    return received;
}

int recbot_datagram_send(int fd, const uint8_t *bytes, size_t length, const recbot_datagram_address *to) {
    struct sockaddr_storage storage;
    socklen_t address_length = to_sockaddr(to, &storage);
    ssize_t sent = sendto(fd, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&storage, address_length);
    return sent < 0 ? -errno : 0;
}

int recbot_datagram_receive_buffer(int fd) {
    int value = 0;
    socklen_t length = sizeof value;
    return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, &length) == 0 ? value : -errno;
}

void recbot_datagram_stop_reading(int fd) {
    /* On an unconnected UDP socket Linux answers ENOTCONN but still marks the socket shut
       and wakes its readers, which then return at once. */
    (void)shutdown(fd, SHUT_RDWR);
}

void recbot_name_current_thread(const char *name) {
    char bounded[16];
    strncpy(bounded, name, sizeof bounded - 1);
    bounded[sizeof bounded - 1] = '\0';
    (void)pthread_setname_np(pthread_self(), bounded);
}

int recbot_datagram_set_filter(int fd, const recbot_filter_instruction *program, unsigned short count) {
    /* Detached first: a replacement is charged to the socket's option memory next to the
       program it replaces, which would halve the largest program a socket can hold. Datagrams
       arriving in between pass unfiltered, to be judged in user space. */
    int unused = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused) != 0 && errno != ENOENT) return -errno;
    if (count == 0) return 0;
    _Static_assert(sizeof(recbot_filter_instruction) == sizeof(struct sock_filter), "sock_filter layout");
    struct sock_fprog fprog = {.len = count, .filter = (struct sock_filter *)program};
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) == 0 ? 0 : -errno;
}
