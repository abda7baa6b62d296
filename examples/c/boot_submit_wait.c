/* boot_submit_wait.c: drive a gspc runtime from C, as a GPI-Space client program would
 * (gspc::client's submit, put_token, wait_and_extract).
 *
 *   gspc boot --topology worker:2                    # start the runtime
 *   pnetc add.xpnet -o add.pnet                      # the net: r = n + extra (put_token)
 *   cc boot_submit_wait.c -I runtime/client-c/include -L target/debug -lpnet_client \
 *      -Wl,-rpath,target/debug -o boot_submit_wait
 *   ./boot_submit_wait ~/.local/state/gspc add.pnet  # prints the outputs
 *
 * With a third argument, the program boots its own runtime in STATE_DIR with that topology
 * (`gspc` from $GSPC or the PATH) and stops it at the end, as a GPI-Space program with a
 * scoped runtime system does:
 *
 *   ./boot_submit_wait /tmp/my-runtime add.pnet worker:2
 *
 * The net (docs/PROTOCOL.md): in port n : long, put_token place extra : long, out port r.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "pnet_client.h"

static int check(int status, const char *what) {
  if (status != PNET_OK) {
    fprintf(stderr, "%s failed (%d): %s\n", what, status, pnet_last_error());
  }
  return status;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s STATE_DIR NET.pnet [TOPOLOGY]\n", argv[0]);
    return 2;
  }
  pnet_client *client = NULL;
  const int boot = argc == 4;
  if (boot) {
    if (check(pnet_boot(NULL, argv[1], argv[3], NULL, &client), "boot") != PNET_OK) {
      return 1;
    }
    printf("booted a runtime in %s\n", argv[1]);
  } else if (check(pnet_connect(argv[1], &client), "connect") != PNET_OK) {
    return 1;
  }

  /* submit with the input n = 40 */
  uint64_t job = 0;
  int rc = check(pnet_submit(client, argv[2], "{\"n\": [40]}", "c-example", &job), "submit");
  if (rc == PNET_OK) {
    printf("submitted job %" PRIu64 "\n", job);
    /* the job waits for a token on `extra`: put one, then say that no more will come */
    rc = check(pnet_put_token(client, job, "extra", "2"), "put_token");
  }
  if (rc == PNET_OK) {
    /* a value of the wrong type is refused with a message */
    if (pnet_put_token(client, job, "extra", "\"two\"") == PNET_ERR_REQUEST) {
      printf("refused: %s\n", pnet_last_error());
    }
    char *status = NULL;
    if (check(pnet_job_status(client, job, &status), "status") == PNET_OK) {
      printf("status: %s\n", status);
      pnet_free_string(status);
    }
    rc = check(pnet_close_job(client, job), "close");
  }
  if (rc == PNET_OK) {
    char *result = NULL;
    rc = check(pnet_wait(client, job, 30.0, &result), "wait");
    if (result != NULL) {
      printf("outputs: %s\n", result);
      pnet_free_string(result);
    }
  }
  if (boot && check(pnet_stop(client), "stop") == PNET_OK) {
    printf("stopped the runtime\n");
  }
  pnet_disconnect(client);
  return rc == PNET_OK ? 0 : 1;
}
