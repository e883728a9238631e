/*
 * librdkafka's mock cluster (rdkafka_mock.h), driven from stdin, for failover tests of a Kafka
 * implementation nobody here wrote. Prints "bootstrap HOST:PORT,..." once, then answers each
 * command line with "ok" or "error <why>":
 *   topic NAME PARTITIONS REPLICATION_FACTOR   create a topic
 *   leader NAME PARTITION BROKER               move a partition's leader (-1: none)
 *   down BROKER / up BROKER                    take a broker's listener down, bring it up
 *   errors APIKEY CODE [CODE...]               the next requests of APIKEY, to any broker, fail
 *   broker-error BROKER APIKEY CODE RTT_MS     the next APIKEY request to BROKER fails, late
 *   clear APIKEY                               drop the errors left pushed for APIKEY
 *   apiversion APIKEY MIN MAX                  the versions of APIKEY the brokers offer
 * End of stdin destroys the cluster and exits.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_BYTES_MAX 4096
#define CODES_MAX 64

static void answer(rd_kafka_resp_err_t err) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    printf("ok\n");
  } else {
    printf("error %s\n", rd_kafka_err2str(err));
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  int brokers = argc > 1 ? atoi(argv[1]) : 3;
  char why[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", why, sizeof why);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
  if (rk == NULL) {
    fprintf(stderr, "rd_kafka_new: %s\n", why);
    return 1;
  }
  rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (cluster == NULL) {
    fprintf(stderr, "rd_kafka_mock_cluster_new failed\n");
    return 1;
  }
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(cluster));
  fflush(stdout);

  char line[LINE_BYTES_MAX];
  while (fgets(line, sizeof line, stdin) != NULL) {
    char name[LINE_BYTES_MAX];
    int a, b, c, d;
    if (sscanf(line, "topic %s %d %d", name, &a, &b) == 3) {
      answer(rd_kafka_mock_topic_create(cluster, name, a, b));
    } else if (sscanf(line, "leader %s %d %d", name, &a, &b) == 3) {
      answer(rd_kafka_mock_partition_set_leader(cluster, name, a, b));
    } else if (sscanf(line, "down %d", &a) == 1) {
      answer(rd_kafka_mock_broker_set_down(cluster, a));
    } else if (sscanf(line, "up %d", &a) == 1) {
      answer(rd_kafka_mock_broker_set_up(cluster, a));
    } else if (sscanf(line, "broker-error %d %d %d %d", &a, &b, &c, &d) == 4) {
      answer(rd_kafka_mock_broker_push_request_error_rtts(cluster, a, (int16_t)b, 1,
                                                          (rd_kafka_resp_err_t)c, d));
    } else if (sscanf(line, "apiversion %d %d %d", &a, &b, &c) == 3) {
      answer(rd_kafka_mock_set_apiversion(cluster, (int16_t)a, (int16_t)b, (int16_t)c));
    } else if (sscanf(line, "clear %d", &a) == 1) {
      rd_kafka_mock_clear_request_errors(cluster, (int16_t)a);
      answer(RD_KAFKA_RESP_ERR_NO_ERROR);
    } else if (strncmp(line, "errors ", 7) == 0) {
      rd_kafka_resp_err_t codes[CODES_MAX];
      size_t count = 0;
      char *rest = line + 7;
      char *end;
      long apikey = strtol(rest, &end, 10);
      rest = end;
      while (count < CODES_MAX) {
        long code = strtol(rest, &end, 10);
        if (end == rest) break;
        codes[count++] = (rd_kafka_resp_err_t)code;
        rest = end;
      }
      if (count == 0) {
        printf("error no codes\n");
        fflush(stdout);
      } else {
        rd_kafka_mock_push_request_errors_array(cluster, (int16_t)apikey, count, codes);
        answer(RD_KAFKA_RESP_ERR_NO_ERROR);
      }
    } else {
      printf("error unknown command\n");
      fflush(stdout);
    }
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
