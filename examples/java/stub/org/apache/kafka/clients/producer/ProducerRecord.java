// A stub of the Kafka Java client's class (see KafkaProducer.java).
package org.apache.kafka.clients.producer;

import org.apache.kafka.common.header.Headers;

public class ProducerRecord<K, V> {
  public ProducerRecord(String topic, K key, V value) {}

  public Headers headers() {
    throw new UnsupportedOperationException("stub");
  }
}
