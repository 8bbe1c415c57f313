// A stub of the Kafka Java client's class, with the signatures
// examples/java/Schedule.java uses, so that javac checks it offline.
package org.apache.kafka.clients.producer;

import java.util.Properties;
import java.util.concurrent.Future;

public class KafkaProducer<K, V> implements AutoCloseable {
  public KafkaProducer(Properties properties) {
    throw new UnsupportedOperationException("stub");
  }

  public Future<RecordMetadata> send(ProducerRecord<K, V> record) {
    throw new UnsupportedOperationException("stub");
  }

  @Override
  public void close() {}
}
