// A stub of the Kafka Java client's class (see KafkaProducer.java).
package org.apache.kafka.clients.producer;

public final class RecordMetadata {
  public int partition() {
    return -1;
  }

  public long offset() {
    return -1;
  }
}
