// The smallest valid :publish body of every publishable event type, and the data the service fills in from it
// (contract §5.2-5.3), at the fake clock's start time T. Shared by the publish and stream tests.

export const T = '2025-06-01T12:00:00.000000Z'; // the fake clock's start

export const MINIMAL: Record<string, { body: unknown; data: unknown }> = {
  touch: { body: {}, data: { updateTime: T } },
  temperature: {
    body: { value: 21.5 },
    data: { value: 21.5, updateTime: T, samples: [{ value: 21.5, sampleTime: T }], isBackfilled: false },
  },
  probeWireStatus: { body: { state: 'FOUR_WIRE' }, data: { state: 'FOUR_WIRE', updateTime: T } },
  objectPresent: { body: { state: 'PRESENT' }, data: { state: 'PRESENT', updateTime: T } },
  humidity: {
    body: { relativeHumidity: 45.5, temperature: 22 },
    data: {
      temperature: 22,
      relativeHumidity: 45.5,
      samples: [{ temperature: 22, relativeHumidity: 45.5, sampleTime: T }],
      isBackfilled: false,
      updateTime: T,
    },
  },
  objectPresentCount: { body: { total: 3 }, data: { total: 3, updateTime: T } },
  touchCount: { body: { total: 7 }, data: { total: 7, updateTime: T } },
  waterPresent: { body: { state: 'NOT_PRESENT' }, data: { state: 'NOT_PRESENT', updateTime: T } },
  networkStatus: {
    body: {},
    data: {
      signalStrength: 99,
      rssi: 0,
      updateTime: T,
      cloudConnectors: [{ id: 'emulated-ccon', signalStrength: 99, rssi: 0 }],
      transmissionMode: 'LOW_POWER_STANDARD_MODE',
    },
  },
  batteryStatus: { body: { percentage: 80 }, data: { percentage: 80, updateTime: T } },
  connectionStatus: {
    body: { connection: 'ETHERNET' },
    data: { connection: 'ETHERNET', available: [], updateTime: T },
  },
  ethernetStatus: {
    body: { ipAddress: '10.0.0.2', macAddress: 'f0:b5:b7:00:0a:08' },
    data: { macAddress: 'f0:b5:b7:00:0a:08', ipAddress: '10.0.0.2', errors: [], updateTime: T },
  },
  cellularStatus: { body: { signalStrength: 70 }, data: { signalStrength: 70, errors: [], updateTime: T } },
  co2: { body: { ppm: 420 }, data: { ppm: 420, updateTime: T } },
  pressure: { body: { pascal: 101325.5 }, data: { pascal: 101325.5, updateTime: T } },
  motion: { body: { state: 'MOTION_DETECTED' }, data: { state: 'MOTION_DETECTED', updateTime: T } },
  deskOccupancy: { body: { state: 'OCCUPIED' }, data: { state: 'OCCUPIED', remarks: [], updateTime: T } },
  contact: { body: { state: 'OPEN' }, data: { state: 'OPEN', updateTime: T } },
};
