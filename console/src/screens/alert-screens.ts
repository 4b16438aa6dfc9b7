// The notification rules, alerts and contacts screens (extensions §X5), loaded when one is first opened (app.tsx), as
// the delivery log's are: the first load keeps only what every page needs (the navigation's open-alert badge, and
// the device page's alerts, alert-parts.tsx).
export { AlertPage, Alerts } from './alerts-page.tsx';
export { Contacts } from './contacts.tsx';
export { RuleForm } from './rule-form.tsx';
export { RulePage, Rules } from './rules.tsx';
