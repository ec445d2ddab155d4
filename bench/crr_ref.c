/* The CRR reference (netperf TCP_CRR's loop; netperf is not packaged for
 * this machine's distribution): plain blocking sockets.
 *
 *   crr_ref server PORT CONNS REQ RESP
 *       CONNS threads, each accepting one connection after another on one
 *       listener: read REQ bytes, write RESP bytes, read until the client
 *       closes, close.
 *   crr_ref client HOST PORT CONNS REQ RESP RAMP_S TIME_S [linger0]
 *       CONNS processes (fork), each looping socket, connect, write REQ,
 *       read RESP, close for RAMP_S + TIME_S seconds; transactions that
 *       end in the last TIME_S seconds are counted. Prints
 *       "transactions N window_s T trans_s R failures F".
 * REQ 0 and RESP 0: connect and close only (TCP_CC). linger0: SO_LINGER 0,
 * close sends a reset and leaves no TIME_WAIT (iotoll's --linger0).
 * Build: cc -O2 -pthread -o crr_ref crr_ref.c
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long req_n, resp_n;
static int linger0;
static int lfd;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int io_all(int fd, char *buf, long n, int wr) {
    while (n > 0) {
        long k = n > 65536 ? 65536 : n;
        ssize_t r = wr ? write(fd, buf, k) : read(fd, buf, k);
        if (r <= 0) return -1;
        n -= r;
    }
    return 0;
}

static void *serve(void *arg) {
    (void)arg;
    char *buf = calloc(1, 65536);
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0) continue;
        if (req_n > 0 && io_all(c, buf, req_n, 0) == 0 && resp_n > 0) {
            int one = 1;
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            io_all(c, buf, resp_n, 1);
        }
        while (read(c, buf, 65536) > 0) {}
        close(c);
    }
    return NULL;
}

static int server(int port, int conns) {
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 8192)) {
        perror("bind/listen");
        return 1;
    }
    for (int i = 0; i < conns; i++) {
        pthread_t t;
        pthread_create(&t, NULL, serve, NULL);
    }
    pause();
    return 0;
}

static void client_loop(struct sockaddr_in *a, double ramp, double time_s, int out) {
    char *buf = calloc(1, 65536 + req_n);
    double t0 = now(), start = t0 + ramp, end = start + time_s;
    long done = 0, failed = 0;
    for (;;) {
        double t = now();
        if (t >= end) break;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && linger0) {
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)a, sizeof *a) == 0;
        if (ok && req_n > 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ok = io_all(fd, buf, req_n, 1) == 0 && io_all(fd, buf, resp_n, 0) == 0;
        }
        if (fd >= 0) close(fd);
        t = now();
        if (t >= start && t < end) {
            if (ok) done++; else failed++;
        }
    }
    long r[2] = {done, failed};
    if (write(out, r, sizeof r) != sizeof r) _exit(1);
    _exit(0);
}

static int client(const char *host, int port, int conns, double ramp, double time_s) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "bad address %s\n", host);
        return 2;
    }
    int p[2];
    if (pipe(p)) return 1;
    for (int i = 0; i < conns; i++)
        if (fork() == 0) client_loop(&a, ramp, time_s, p[1]);
    close(p[1]);
    long done = 0, failed = 0, r[2];
    while (read(p[0], r, sizeof r) == sizeof r) {
        done += r[0];
        failed += r[1];
    }
    while (wait(NULL) > 0) {}
    printf("transactions %ld window_s %.3f trans_s %.1f failures %ld\n", done, time_s, done / time_s, failed);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 6 && !strcmp(argv[1], "server")) {
        req_n = atol(argv[4]);
        resp_n = atol(argv[5]);
        return server(atoi(argv[2]), atoi(argv[3]));
    }
    if ((argc == 9 || (argc == 10 && !strcmp(argv[9], "linger0"))) && !strcmp(argv[1], "client")) {
        linger0 = argc == 10;
        req_n = atol(argv[5]);
        resp_n = atol(argv[6]);
        return client(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[7]), atof(argv[8]));
    }
    fprintf(stderr, "usage: crr_ref server PORT CONNS REQ RESP | client HOST PORT CONNS REQ RESP RAMP_S TIME_S [linger0]\n");
    return 2;
}
