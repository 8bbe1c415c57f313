// A stub of the Kafka Java client's interface (see KafkaProducer.java).
package org.apache.kafka.common.header;

public interface Headers {
  Headers add(String key, byte[] value);
}
