/* pnet_client.h: libpnet_client, a C (and C++) client of a gspc runtime.
 *
 * Connect to a runtime started with `gspc boot` (its state directory), submit a net compiled
 * by `pnetc` (a .pnet bundle) with its inputs, put tokens into it, wait for its outputs,
 * cancel it, ask its state. Values are JSON texts in the toolchain's one JSON encoding of
 * values, typed by the net's ports and places (docs/PROTOCOL.md): `40` for a long port,
 * `"text"` for a string, `{"x": 1, "y": 2}` for a struct.
 *
 * Every function returns a pnet_status (PNET_OK is 0); pnet_last_error() gives the message
 * of the calling thread's last error. Strings the library returns are freed with
 * pnet_free_string(). A client may be used by one thread at a time.
 *
 * Link with -lpnet_client (libpnet_client.so), or with libpnet_client.a and -lhwloc -lpthread
 * -ldl -lm.
 */
#ifndef PNET_CLIENT_H
#define PNET_CLIENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pnet_status {
  PNET_OK = 0,
  PNET_ERR_ARGUMENT = 1,   /* a NULL pointer or a string that is not UTF-8 */
  PNET_ERR_NO_RUNTIME = 2, /* no runtime in the state directory, or it cannot be used */
  PNET_ERR_CONNECTION = 3, /* the control socket cannot be reached, or the connection broke */
  PNET_ERR_REFUSED = 4,    /* the runtime refused the request (another user, a wrong secret) */
  PNET_ERR_REQUEST = 5,    /* the runtime answered an error (no such job or place, a bad value) */
  PNET_ERR_BUNDLE = 6,     /* the bundle cannot be read or is not valid */
  PNET_ERR_VALUE = 7,      /* a JSON text is malformed or a value does not fit its port */
  PNET_ERR_TIMEOUT = 8,    /* the wait's time ran out; the job still runs */
  PNET_ERR_JOB_FAILED = 9, /* the job failed or was cancelled (the result describes it) */
  PNET_ERR_PROTOCOL = 10   /* an unexpected answer (a runtime of another release) */
} pnet_status;

/* A connection to a runtime. */
typedef struct pnet_client pnet_client;

/* The message of the calling thread's last error ("" when none); valid until the thread's
 * next call into the library. */
const char *pnet_last_error(void);

/* Connects to the runtime of a state directory (what `gspc --state-dir DIR` uses). */
int pnet_connect(const char *state_dir, pnet_client **out);

/* Boots a runtime as `gspc boot --state-dir state_dir --topology topology [--module-path
 * module_path]` (gspc: the program, NULL for $GSPC, else `gspc` on the PATH; topology NULL:
 * one worker per core; module_path NULL: none), waits for its workers and connects to it.
 * Stop it with pnet_stop. */
int pnet_boot(const char *gspc, const char *state_dir, const char *topology,
              const char *module_path, pnet_client **out);

/* Stops the client's runtime (running jobs are cancelled); then pnet_disconnect. */
int pnet_stop(pnet_client *client);

/* Frees a client (NULL is fine). */
void pnet_disconnect(pnet_client *client);

/* Frees a string returned by the library (NULL is fine). */
void pnet_free_string(char *s);

/* Submits the bundle at bundle_path (a .pnet from pnetc) with inputs_json, an object
 * {"PORT": [TOKEN, ...]} (NULL: none); name is shown by `gspc jobs` (NULL: the file name).
 * Writes the job id to *job. */
int pnet_submit(pnet_client *client, const char *bundle_path, const char *inputs_json,
                const char *name, uint64_t *job);

/* Puts a token (value_json, decoded against the place's type) on a put_token place of the
 * job's root net. */
int pnet_put_token(pnet_client *client, uint64_t job, const char *place,
                   const char *value_json);

/* No more tokens will be put: a net with put_token places ends once nothing is left to do. */
int pnet_close_job(pnet_client *client, uint64_t job);

/* Cancels a running job. */
int pnet_cancel(pnet_client *client, uint64_t job);

/* Waits until the job has ended (at most timeout_seconds; 0 or less: no limit) and writes
 * its outcome as JSON text to *result (free it with pnet_free_string):
 *   {"kind":"outcome","job":1,"state":"done",
 *    "outputs":{"r":{"type":"long","tokens":[42]}},"firings":1,"tasks":0,"ending":{...}}
 * PNET_ERR_JOB_FAILED when the job failed ("state":"failed", "message") or was cancelled,
 * with *result set; PNET_ERR_TIMEOUT when the time ran out (*result untouched). */
int pnet_wait(pnet_client *client, uint64_t job, double timeout_seconds, char **result);

/* The job's state as JSON text (free it with pnet_free_string):
 *   {"id":1,"net":"add.pnet","state":"running","tasks_running":0,...} */
int pnet_job_status(pnet_client *client, uint64_t job, char **status);

#ifdef __cplusplus
}
#endif

#endif /* PNET_CLIENT_H */
