/*
 * An open-loop HTTP/1.1 load generator (the bench's latency phase, open-loop.ts builds and runs it).
 *
 * Requests are due on a fixed schedule (one every 1/rate s, dealt round-robin over the connections), not
 * after the previous answer: a slow answer delays the requests queued behind it on its connection, and
 * each latency is measured from when its request was due, not from when it could be sent. A closed-loop
 * tool (wrk, autocannon) waits for each answer before sending the next, so it sends less exactly when the
 * server is slow and hides the slow answers it did not send ("coordinated omission").
 *
 * usage: open-loop PORT RATE SECONDS WARMUP CONNECTIONS CLIENTS
 *   CLIENTS 0: every request is client 'hot'; else a random client id in 1..CLIENTS (header x-client-id).
 * Prints one line of JSON: latencies in microseconds of the requests due after WARMUP seconds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define QUEUE 4096 /* requests due but unanswered, per connection (a ring) */
#define BUF 65536

typedef struct {
  int fd;
  int64_t due[QUEUE]; /* when each queued request was due (ns); the head one is on the wire */
  int head, count;
  int sent_head; /* whether the head request has been written */
  char in[BUF];
  size_t in_len;
} conn_t;

static int port;
static int clients;
static conn_t *conns;
static int nconns;
static int64_t *lat; /* ns, of the measured requests */
static size_t nlat, cap_lat;
static int64_t measure_from;
static long non2xx, errors, completed_total, overflow;
/* Requests queued over all connections, and whether a connection may have a head request still unsent (one
 * still connecting, or reconnected): the loop's work per wake-up does not grow with the connections. */
static long queued;
static int unsent;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

static int epfd;

static void watch(conn_t *c) {
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
  epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void send_head(conn_t *c) {
  char req[256];
  int n;
  if (clients > 0)
    n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nx-client-id: %d\r\n\r\n", 1 + rand() % clients);
  else
    n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nx-client-id: hot\r\n\r\n");
  /* A small request on a connection with nothing else in flight: the socket buffer takes it whole. A
   * connection still being set up fails with EAGAIN/ENOTCONN: it is retried from the loop. */
  if (write(c->fd, req, n) == n) c->sent_head = 1;
  else unsent = 1;
}

static void reconnect(conn_t *c) {
  errors++;
  epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = dial();
  c->in_len = 0;
  c->sent_head = 0;
  unsent = 1;
  if (c->fd >= 0) watch(c);
}

/* The length of the first whole response in the buffer, 0 if it is not all here yet; its status in *status. */
static size_t response_length(const char *b, size_t len, int *status) {
  const char *end = memmem(b, len, "\r\n\r\n", 4);
  if (end == NULL) return 0;
  size_t head = (size_t)(end - b) + 4;
  *status = len > 12 ? atoi(b + 9) : 0;
  const char *p = b;
  while (p < end) {
    const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
    if (eol == NULL) break;
    if (strncasecmp(p, "content-length:", 15) == 0) {
      size_t body = (size_t)strtoul(p + 15, NULL, 10);
      return len >= head + body ? head + body : 0;
    }
    if (strncasecmp(p, "transfer-encoding:", 18) == 0) {
      const char *last = memmem(end, len - (size_t)(end - b), "\r\n0\r\n\r\n", 7);
      return last == NULL ? 0 : (size_t)(last - b) + 7;
    }
    p = eol + 2;
  }
  return head;
}

static void on_readable(conn_t *c) {
  for (;;) {
    ssize_t n = read(c->fd, c->in + c->in_len, BUF - c->in_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      reconnect(c);
      return;
    }
    if (n < 0) return;
    c->in_len += (size_t)n;
    int status;
    size_t used;
    while (c->count > 0 && (used = response_length(c->in, c->in_len, &status)) > 0) {
      int64_t t = now_ns();
      int64_t due = c->due[c->head];
      c->head = (c->head + 1) % QUEUE;
      c->count--;
      queued--;
      c->sent_head = 0;
      completed_total++;
      if (due >= measure_from) {
        if (nlat == cap_lat) {
          cap_lat = cap_lat ? cap_lat * 2 : 1 << 16;
          lat = realloc(lat, cap_lat * sizeof *lat);
        }
        lat[nlat++] = t - due;
        if (status < 200 || status >= 400) non2xx++;
      }
      memmove(c->in, c->in + used, c->in_len - used);
      c->in_len -= used;
      if (c->count > 0) send_head(c);
    }
    if (c->in_len == BUF) {
      reconnect(c);
      return;
    }
  }
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(double p) {
  if (nlat == 0) return 0;
  size_t i = (size_t)(p / 100.0 * (double)nlat);
  if (i >= nlat) i = nlat - 1;
  return (double)lat[i] / 1000.0;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: open-loop PORT RATE SECONDS WARMUP CONNECTIONS CLIENTS\n");
    return 2;
  }
  port = atoi(argv[1]);
  double rate = atof(argv[2]), seconds = atof(argv[3]), warmup = atof(argv[4]);
  nconns = atoi(argv[5]);
  clients = atoi(argv[6]);
  if (port <= 0 || rate <= 0 || seconds <= 0 || warmup < 0 || nconns <= 0 || clients < 0) {
    fprintf(stderr, "open-loop: bad arguments\n");
    return 2;
  }
  srand((unsigned)now_ns());
  epfd = epoll_create1(0);
  conns = calloc((size_t)nconns, sizeof *conns);
  for (int i = 0; i < nconns; i++) {
    conns[i].fd = dial();
    if (conns[i].fd < 0) {
      fprintf(stderr, "open-loop: cannot connect to 127.0.0.1:%d\n", port);
      return 1;
    }
    watch(&conns[i]);
  }
  usleep(100000); /* the connections are set up before the first request is due */
  int64_t interval = (int64_t)(1e9 / rate);
  int64_t start = now_ns();
  measure_from = start + (int64_t)(warmup * 1e9);
  int64_t stop_due = start + (int64_t)((warmup + seconds) * 1e9);
  int64_t next = start;
  long slot = 0, scheduled = 0;
  struct epoll_event evs[256];
  for (;;) {
    int64_t t = now_ns();
    while (next <= t && next < stop_due) {
      conn_t *c = &conns[slot++ % nconns];
      if (c->count == QUEUE) {
        overflow++;
      } else {
        c->due[(c->head + c->count) % QUEUE] = next;
        c->count++;
        queued++;
        scheduled++;
        if (!c->sent_head && c->fd >= 0) send_head(c);
      }
      next += interval;
    }
    if (unsent) {
      unsent = 0;
      for (int i = 0; i < nconns; i++)
        if (conns[i].count > 0 && !conns[i].sent_head) {
          if (conns[i].fd >= 0) send_head(&conns[i]);
          else unsent = 1;
        }
    }
    if (next >= stop_due && queued == 0) break;
    /* Answers stop coming: whatever is still queued 10 s after the last request was due counts as lost. */
    if (t > stop_due + 10000000000LL) break;
    int64_t wait_ns = next < stop_due ? next - now_ns() : 10000000;
    struct timespec ts = {.tv_sec = wait_ns > 0 ? wait_ns / 1000000000 : 0, .tv_nsec = wait_ns > 0 ? wait_ns % 1000000000 : 0};
    int n = epoll_pwait2(epfd, evs, 256, &ts, NULL);
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) on_readable(c);
    }
  }
  long lost = 0;
  for (int i = 0; i < nconns; i++) lost += conns[i].count;
  qsort(lat, nlat, sizeof *lat, cmp);
  double sum = 0;
  for (size_t i = 0; i < nlat; i++) sum += (double)lat[i];
  double span = (double)(now_ns() - measure_from) / 1e9;
  printf("{\"scheduled\":%ld,\"measured\":%zu,\"seconds\":%.3f,\"non2xx\":%ld,\"errors\":%ld,\"lost\":%ld,\"overflow\":%ld,"
         "\"meanUs\":%.1f,\"p50Us\":%.1f,\"p90Us\":%.1f,\"p99Us\":%.1f,\"p999Us\":%.1f,\"maxUs\":%.1f}\n",
         scheduled, nlat, span, non2xx, errors, lost, overflow, nlat ? sum / (double)nlat / 1000.0 : 0, pct(50), pct(90), pct(99),
         pct(99.9), nlat ? (double)lat[nlat - 1] / 1000.0 : 0);
  return 0;
}
