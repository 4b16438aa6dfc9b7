// The delivery log's screens, loaded when one is first opened (app.tsx): they are used rarely next to the rest of
// the console, and keep its first load small (docs/console.md, "Size").
export { Deliveries } from './deliveries.tsx';
export { DeliveryPage } from './delivery.tsx';
