import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Schedules a deadline with the Kafka Java client: java Schedule.java [ID [DELAY_SECONDS]]. */
public class Schedule {
  static String env(String name, String fallback) {
    return Objects.requireNonNullElse(System.getenv(name), fallback);
  }

  static final String BROKERS = env("HOURGLASS_BROKERS", "127.0.0.1:9092");
  static final String PREFIX = env("HOURGLASS_TOPIC_PREFIX", "hourglass."); // the router's --topic-prefix
  static final String TIERS = env("HOURGLASS_TIERS", // the router's --tiers
      "1m,2m,5m,10m,30m,1h,3h,12h,24h,72h,168h,720h,2160h,6480h");
  static final long TOLERANCE_MS = 10; // tiers.Tolerance

  /** A tier in Go duration syntax (1m, 1h30m, 500ms) in milliseconds. */
  static long tierMs(String name) {
    long ms = 0;
    Matcher m = Pattern.compile("(\\d+)(ms|s|m|h)").matcher(name);
    while (m.find()) {
      long n = Long.parseLong(m.group(1));
      ms += switch (m.group(2)) {
        case "ms" -> n;
        case "s" -> n * 1_000;
        case "m" -> n * 60_000;
        default -> n * 3_600_000;
      };
    }
    return ms;
  }

  /** The largest tier not longer than the delay, or the smallest tier. */
  static String delayTopic(long delayMs) {
    List<String> tiers = Arrays.stream(TIERS.split(",")).sorted(Comparator.comparingLong(Schedule::tierMs)).toList();
    String tier = tiers.get(0);
    for (String t : tiers) {
      if (tierMs(t) <= delayMs + TOLERANCE_MS) {
        tier = t;
      }
    }
    return PREFIX + "delay." + tier;
  }

  public static void main(String[] args) throws Exception {
    String id = args.length > 0 ? args[0] : "order-42";
    long delayMs = (args.length > 1 ? Long.parseLong(args[1]) : 1800) * 1000;
    Properties props = new Properties();
    props.put("bootstrap.servers", BROKERS);
    props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
    props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
    props.put("enable.idempotence", "true"); // the default partitioner hashes the key with murmur2
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props)) {
      long now = System.currentTimeMillis();
      long due = now + delayMs; // milliseconds, not Instant.getEpochSecond()
      ProducerRecord<String, byte[]> r = new ProducerRecord<>(
          delayTopic(delayMs), id, ("{\"order\":\"" + id + "\"}").getBytes(StandardCharsets.UTF_8));
      r.headers().add("hourglass-due", Long.toString(due).getBytes(StandardCharsets.US_ASCII)); // required
      r.headers().add("hourglass-kind", "order-timeout".getBytes(StandardCharsets.US_ASCII)); // optional
      r.headers().add("hourglass-scheduled", Long.toString(now).getBytes(StandardCharsets.US_ASCII));
      producer.send(r).get(15, TimeUnit.SECONDS); // throws when the broker did not take it
    }
  }
}
