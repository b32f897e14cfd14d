package io.ferry;

/** One iRODS metadata triple (attribute, value, units; units may be empty) on a data object or collection. */
public record IrodsAvu(String attribute, String value, String units) {
  static IrodsAvu of(String attribute, String value, String units) {
    return new IrodsAvu(attribute, value, units);
  }
}
