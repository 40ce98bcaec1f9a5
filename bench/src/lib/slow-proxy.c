/*
 * A Redis that answers slowly: a TCP proxy on loopback that holds every chunk of the upstream's replies for
 * DELAY_US microseconds before passing it on (requests go through at once). slow-proxy.ts builds and runs it
 * for the latency phase of `npm run bench`.
 *
 * Each chunk leaves when its due time (arrival + delay, on CLOCK_MONOTONIC) has come, never sooner: one
 * timerfd armed in nanoseconds at the earliest due time, and a timer slack of 1 ns. A proxy on Node's
 * setTimeout cannot do that: its clock is the event loop's millisecond, cached at the start of an iteration,
 * so a "1 ms" delay held a chunk anywhere from almost nothing to about 1 ms, and less the busier the proxy
 * was, which made the delay depend on how many chunks a limiter's client sends.
 * Chunks leave in the order they came (the delay is the same for all), so each connection's replies keep theirs.
 *
 * usage: slow-proxy UPSTREAM_PORT DELAY_US
 * Listens on a free port of 127.0.0.1 and prints "port N" once it accepts connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536

typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

typedef struct pair pair_t;

/* One side of a proxied connection: epoll's data points at it. */
typedef struct {
  pair_t *pair;
  int fd;
  int upstream;   /* 1: the Redis side */
  int want_write; /* EPOLLOUT registered */
  buf_t out;      /* written to fd as it drains */
} end_t;

struct pair {
  end_t client, up;
  int closed;
  int pending; /* chunks of this pair still held */
  pair_t *next_dead;
};

/* A held chunk; the list is in arrival order, which is due order. */
typedef struct held {
  struct held *next;
  pair_t *pair;
  int64_t due;
  size_t len; /* 0: the upstream closed; close the pair when this is due */
  char data[];
} held_t;

static int epfd, tfd, upstream_port;
static int64_t delay_ns;
static held_t *head, *tail;
/* Closed pairs, freed between two epoll_waits once no held chunk points at them (an event of the same
 * batch may still name one of their ends). */
static pair_t *dead;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void arm(void) {
  struct itimerspec it = {0};
  if (head != NULL) {
    it.it_value.tv_sec = head->due / 1000000000;
    it.it_value.tv_nsec = head->due % 1000000000;
  }
  if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL) < 0) die("timerfd_settime");
}

static void append(buf_t *b, const char *data, size_t len) {
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + len) cap *= 2;
    b->data = realloc(b->data, cap);
    if (b->data == NULL) die("realloc");
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, len);
  b->len += len;
}

static void set_events(end_t *e) {
  struct epoll_event ev = {.events = EPOLLIN | (e->want_write ? EPOLLOUT : 0), .data.ptr = e};
  epoll_ctl(epfd, EPOLL_CTL_MOD, e->fd, &ev);
}

static void close_pair(pair_t *p) {
  if (p->closed) return;
  p->closed = 1;
  close(p->client.fd);
  close(p->up.fd);
  free(p->client.out.data);
  free(p->up.out.data);
  p->next_dead = dead;
  dead = p;
}

static void bury(void) {
  pair_t **at = &dead;
  while (*at != NULL) {
    pair_t *p = *at;
    if (p->pending > 0) {
      at = &p->next_dead;
    } else {
      *at = p->next_dead;
      free(p);
    }
  }
}

/* Writes what `e` holds; what the socket does not take waits for EPOLLOUT. */
static void flush(end_t *e) {
  while (e->out.len > 0) {
    ssize_t n = write(e->fd, e->out.data, e->out.len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == ENOTCONN) break; /* full, or the upstream still connecting */
      close_pair(e->pair);
      return;
    }
    memmove(e->out.data, e->out.data + n, e->out.len - (size_t)n);
    e->out.len -= (size_t)n;
  }
  int want = e->out.len > 0;
  if (want != e->want_write) {
    e->want_write = want;
    set_events(e);
  }
}

static void hold(pair_t *p, const char *data, size_t len) {
  held_t *h = malloc(sizeof *h + len);
  if (h == NULL) die("malloc");
  h->next = NULL;
  h->pair = p;
  h->due = now_ns() + delay_ns;
  h->len = len;
  memcpy(h->data, data, len);
  p->pending++;
  if (tail == NULL) {
    head = tail = h;
    arm();
  } else {
    tail->next = h;
    tail = h;
  }
}

/* Passes on every held chunk whose time has come, then arms the timer for the next. */
static void release(void) {
  uint64_t expirations;
  if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd");
  int64_t t = now_ns();
  while (head != NULL && head->due <= t) {
    held_t *h = head;
    head = h->next;
    if (head == NULL) tail = NULL;
    pair_t *p = h->pair;
    if (!p->closed) {
      if (h->len == 0) {
        close_pair(p);
      } else {
        append(&p->client.out, h->data, h->len);
        flush(&p->client);
      }
    }
    p->pending--;
    free(h);
  }
  arm();
}

static void readable(end_t *e) {
  char chunk[CHUNK];
  pair_t *p = e->pair;
  for (;;) {
    ssize_t n = read(e->fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      /* The upstream's end is held like its replies; the client's closes the pair now. */
      if (e->upstream) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, e->fd, NULL);
        hold(p, NULL, 0);
      } else {
        close_pair(p);
      }
      return;
    }
    if (e->upstream) {
      hold(p, chunk, (size_t)n);
    } else {
      append(&p->up.out, chunk, (size_t)n);
      flush(&p->up);
      if (p->closed) return;
    }
  }
}

static void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void watch(end_t *e) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = e};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, e->fd, &ev) < 0) die("epoll_ctl");
}

static void accept_one(int lfd) {
  int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
  if (cfd < 0) return;
  int ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)upstream_port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (ufd < 0 || (connect(ufd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)) {
    close(cfd);
    if (ufd >= 0) close(ufd);
    return;
  }
  nodelay(cfd);
  nodelay(ufd);
  pair_t *p = calloc(1, sizeof *p);
  if (p == NULL) die("calloc");
  p->client = (end_t){.pair = p, .fd = cfd, .upstream = 0};
  p->up = (end_t){.pair = p, .fd = ufd, .upstream = 1};
  watch(&p->client);
  watch(&p->up);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: slow-proxy UPSTREAM_PORT DELAY_US\n");
    return 2;
  }
  upstream_port = atoi(argv[1]);
  delay_ns = (int64_t)atoll(argv[2]) * 1000;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake when the timer says, not up to 50 µs after */
  signal(SIGPIPE, SIG_IGN);                /* a write to a side that closed fails with EPIPE and closes the pair */
  prctl(PR_SET_PDEATHSIG, SIGTERM);        /* a bench run that is killed takes its proxy with it */
  if (getppid() == 1) return 1;            /* ... even one killed before the line above ran */

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 1024) < 0) die("listen");
  socklen_t alen = sizeof a;
  getsockname(lfd, (struct sockaddr *)&a, &alen);

  epfd = epoll_create1(0);
  tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  if (epfd < 0 || tfd < 0) die("epoll/timerfd");
  /* The listener and the timer are told apart from the connections' ends by these two addresses. */
  static int listener_tag, timer_tag;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listener_tag};
  epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.ptr = &timer_tag;
  epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev);

  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);

  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(epfd, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    for (int i = 0; i < n; i++) {
      void *tag = events[i].data.ptr;
      if (tag == &listener_tag) {
        accept_one(lfd);
      } else if (tag == &timer_tag) {
        release();
      } else {
        end_t *e = tag;
        if (e->pair->closed) continue;
        if (events[i].events & EPOLLOUT) flush(e);
        if (!e->pair->closed && events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(e);
      }
    }
    if (dead != NULL) bury();
  }
}
