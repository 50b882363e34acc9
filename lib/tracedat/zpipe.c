// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A v7 file's compressed chunks made beside the writer: the pages of a CPU fill batches of
 * chunks, worker threads compress whole batches, and the writer takes them back in the
 * order they were filled. Each chunk is cut and compressed exactly as one thread would do
 * it, so the file is the same byte for byte; only the compressing is spread over the free
 * CPUs. While it waits for the oldest batch, the writer compresses a waiting one itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/thread.h"
#include "tracedat-local.h"

#define ZP_CHUNKS 16 /* chunks a batch: one hand-over compresses 16 of them */
#define ZP_THREADS 7

enum { B_FILLING, B_QUEUED, B_WORKING, B_DONE };

struct zbatch {
	uint8_t *in; /* up to ZP_CHUNKS chunks, the last maybe shorter */
	size_t len;
	uint8_t *out; /* the compressed chunks, each at ZP_CHUNKS' bound apart */
	size_t clen[ZP_CHUNKS];
	int state, err;
};

struct hgt__zpipe {
	enum hgt_compression comp;
	size_t chunk, bound; /* a chunk's bytes; the most one compresses to */
	struct zbatch *b;
	int nb;
	int head, nq; /* the oldest batch handed over, and how many are */
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	pthread_t th[ZP_THREADS];
	int nth;
	bool stop;
	void *cctx; /* the writer's */
};

/* The bytes of @b's chunk at @off: a whole chunk, or the batch's last, shorter one. */
static size_t chunk_len(const struct hgt__zpipe *z, const struct zbatch *b, size_t off)
{
	return b->len - off < z->chunk ? b->len - off : z->chunk;
}

/* Compress batch @b with @cctx (the lock not held). */
static void compress_batch(struct hgt__zpipe *z, struct zbatch *b, void *cctx)
{
	b->err = 0;
	for (size_t off = 0, i = 0; off < b->len && !b->err; off += z->chunk, i++)
		b->err = hgt__compress_into(z->comp, cctx, b->in + off, chunk_len(z, b, off),
					    b->out + i * z->bound, z->bound, &b->clen[i]);
}

/* The oldest batch handed over and not taken up yet (the lock held), or NULL. */
static struct zbatch *queued(struct hgt__zpipe *z)
{
	for (int k = 0; k < z->nq; k++) {
		struct zbatch *b = &z->b[(z->head + k) % z->nb];

		if (b->state == B_QUEUED)
			return b;
	}
	return NULL;
}

/* Take batch @b up and compress it; the lock is held before and after. */
static void work_on(struct hgt__zpipe *z, struct zbatch *b, void *cctx)
{
	b->state = B_WORKING;
	pthread_mutex_unlock(&z->lock);
	compress_batch(z, b, cctx);
	pthread_mutex_lock(&z->lock);
	b->state = B_DONE;
	pthread_cond_broadcast(&z->done);
}

static void *worker(void *arg)
{
	struct hgt__zpipe *z = arg;
	void *cctx = hgt__cctx_new(z->comp);

	if (z->comp == HGT_COMPRESS_ZSTD && !cctx)
		return NULL; /* the writer compresses what it hands over itself */
	pthread_mutex_lock(&z->lock);
	while (!z->stop) {
		struct zbatch *b = queued(z);

		if (b)
			work_on(z, b, cctx);
		else
			pthread_cond_wait(&z->work, &z->lock);
	}
	pthread_mutex_unlock(&z->lock);
	hgt__cctx_free(z->comp, cctx);
	return NULL;
}

/**
 * hgt__zpipe_new - compress chunks of @chunk bytes with @comp on @threads worker threads
 * (1 to 7) besides the writer. NULL (errno set) when they cannot start: write inline.
 */
struct hgt__zpipe *hgt__zpipe_new(enum hgt_compression comp, size_t chunk, int threads)
{
	struct hgt__zpipe *z = calloc(1, sizeof(*z));
	int i;

	if (!z)
		return NULL;
	z->comp = comp;
	z->chunk = chunk;
	z->bound = hgt__compress_bound(comp, chunk);
	z->nb = 2 * (threads < 1 ? 1 : threads > ZP_THREADS ? ZP_THREADS : threads) + 2;
	z->b = calloc((size_t)z->nb, sizeof(*z->b));
	z->cctx = hgt__cctx_new(comp);
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->work, NULL);
	pthread_cond_init(&z->done, NULL);
	if (!z->b || !z->bound || (comp == HGT_COMPRESS_ZSTD && !z->cctx))
		goto fail;
	for (i = 0; i < z->nb; i++) {
		z->b[i].in = malloc(chunk * ZP_CHUNKS);
		z->b[i].out = malloc(z->bound * ZP_CHUNKS);
		if (!z->b[i].in || !z->b[i].out)
			goto fail;
	}
	for (i = 0; i < (z->nb - 2) / 2; i++) {
		if (hgt__thread_create(&z->th[i], worker, z))
			break;
		z->nth++;
	}
	if (z->nth)
		return z;
fail:
	hgt__zpipe_free(z);
	errno = ENOMEM;
	return NULL;
}

/**
 * hgt__zpipe_threads - how many workers a file's compression takes: one per free CPU
 * (hgt__cpus_free()) but the writer's (HGT_THREADS: that many threads in all); 0: none.
 */
int hgt__zpipe_threads(void)
{
	const char *e = getenv("HGT_THREADS");
	long nt = e ? strtol(e, NULL, 10) : hgt__cpus_free();

	return nt < 2 ? 0 : nt > ZP_THREADS ? ZP_THREADS : (int)nt - 1;
}

/* The batch being filled: the one after those handed over. */
static struct zbatch *filling(struct hgt__zpipe *z)
{
	return &z->b[(z->head + z->nq) % z->nb];
}

/* The oldest batch handed over, compressed (by the writer itself while none is ready),
 * given to @emit chunk by chunk, and free again. Returns 0 or the first error. */
static int take_back(struct hgt__zpipe *z, hgt__zpipe_emit emit, void *ctx)
{
	struct zbatch *b = &z->b[z->head], *q;
	int ret;

	pthread_mutex_lock(&z->lock);
	while (b->state != B_DONE) {
		q = queued(z);
		if (q)
			work_on(z, q, z->cctx);
		else
			pthread_cond_wait(&z->done, &z->lock);
	}
	z->head = (z->head + 1) % z->nb;
	z->nq--;
	pthread_mutex_unlock(&z->lock);
	ret = b->err;
	for (size_t off = 0, i = 0; off < b->len && !ret; off += z->chunk, i++)
		ret = emit(ctx, b->out + i * z->bound, b->clen[i], chunk_len(z, b, off));
	b->len = 0;
	b->state = B_FILLING;
	return ret;
}

/* Hand the batch being filled to the workers; with every batch handed over, take the
 * oldest back, and any older one already done. Returns 0 or the first error. */
static int hand_over(struct hgt__zpipe *z, hgt__zpipe_emit emit, void *ctx)
{
	struct zbatch *b = filling(z);
	int ret = 0;

	pthread_mutex_lock(&z->lock);
	b->state = B_QUEUED;
	z->nq++;
	pthread_cond_signal(&z->work);
	pthread_mutex_unlock(&z->lock);
	while (!ret && z->nq) {
		bool done;

		pthread_mutex_lock(&z->lock);
		done = z->b[z->head].state == B_DONE;
		pthread_mutex_unlock(&z->lock);
		if (!done && z->nq < z->nb)
			break;
		ret = take_back(z, emit, ctx);
	}
	return ret;
}

/**
 * hgt__zpipe_space - room for a CPU's next pages in the batch being filled: *@cap bytes at
 * the returned address, where the caller may read them in place (no copy). They count
 * once hgt__zpipe_commit() takes them.
 */
uint8_t *hgt__zpipe_space(struct hgt__zpipe *z, size_t *cap)
{
	struct zbatch *b = filling(z);

	*cap = z->chunk * ZP_CHUNKS - b->len;
	return b->in + b->len;
}

/**
 * hgt__zpipe_commit - the first @len bytes of hgt__zpipe_space()'s room (no more than it
 * gave) put after those put before; a batch that is full goes to the workers, and @emit is
 * called as in hgt__zpipe_put(). Returns 0 or the first error.
 */
int hgt__zpipe_commit(struct hgt__zpipe *z, size_t len, hgt__zpipe_emit emit, void *ctx)
{
	struct zbatch *b = filling(z);

	b->len += len;
	return b->len == z->chunk * ZP_CHUNKS ? hand_over(z, emit, ctx) : 0;
}

/**
 * hgt__zpipe_put - @len bytes of a CPU's pages, after those put before: each whole chunk
 * goes to the workers in its batch, and @emit(@ctx, DATA, COMPRESSED SIZE, SIZE) is called
 * for the compressed chunks as they come back, in order. Returns 0 or the first error
 * (compressing, or @emit's).
 */
int hgt__zpipe_put(struct hgt__zpipe *z, const uint8_t *p, size_t len, hgt__zpipe_emit emit,
		   void *ctx)
{
	int ret = 0;

	while (len && !ret) {
		size_t room, k;
		uint8_t *d = hgt__zpipe_space(z, &room);

		k = room < len ? room : len;
		memcpy(d, p, k);
		p += k;
		len -= k;
		ret = hgt__zpipe_commit(z, k, emit, ctx);
	}
	return ret;
}

/**
 * hgt__zpipe_flush - the CPU's last chunk (maybe short) handed over, and every chunk
 * given to @emit, in order. Returns 0 or the first error.
 */
int hgt__zpipe_flush(struct hgt__zpipe *z, hgt__zpipe_emit emit, void *ctx)
{
	int ret = filling(z)->len ? hand_over(z, emit, ctx) : 0, r;

	while (z->nq) { /* after an error too: no batch is left in the workers' hands */
		r = take_back(z, emit, ctx);
		ret = ret ? ret : r;
	}
	return ret;
}

void hgt__zpipe_free(struct hgt__zpipe *z)
{
	if (!z)
		return;
	pthread_mutex_lock(&z->lock);
	z->stop = true;
	pthread_cond_broadcast(&z->work);
	pthread_mutex_unlock(&z->lock);
	for (int i = 0; i < z->nth; i++)
		hgt__thread_join(z->th[i]);
	for (int i = 0; z->b && i < z->nb; i++) {
		free(z->b[i].in);
		free(z->b[i].out);
	}
	free(z->b);
	hgt__cctx_free(z->comp, z->cctx);
	pthread_cond_destroy(&z->work);
	pthread_cond_destroy(&z->done);
	pthread_mutex_destroy(&z->lock);
	free(z);
}
