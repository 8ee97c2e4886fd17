// Data: the NANP area codes that name a service, not a place (toll-free, personal communications, premium rate,
// Canada's non-geographic codes), so that a callee's number can say why it places nobody. Hand-kept; the country of
// each code a numbering plan assigns is number-plan.ts's (from libphonenumber-js).
// Sources: NANPA's assignments of non-geographic NPAs as listed by LincMad, "Non-geographic Telephone Codes for North
// America" (lincmad.com/nongeographic.html, read 2026): 8XX toll-free (800, 833, 844, 855, 866, 877, 888; 822,
// 880–887 and 889 reserved for it), 5XX personal communications services ("follow-me" numbers), 600/622/633/644
// Canadian non-geographic services, 700 carrier-specific services, 710 the US federal government, 900 information
// services (premium rate), 456 inbound international data (discontinued).

const TOLL_FREE = 'toll-free';
const PERSONAL = 'personal communications service';

/** NANP area code → the service it names. */
export const NON_GEOGRAPHIC_AREA_CODES: Readonly<Record<string, string>> = {
  '800': TOLL_FREE, '822': TOLL_FREE, '833': TOLL_FREE, '844': TOLL_FREE, '855': TOLL_FREE, '866': TOLL_FREE,
  '877': TOLL_FREE, '880': TOLL_FREE, '881': TOLL_FREE, '882': TOLL_FREE, '883': TOLL_FREE, '884': TOLL_FREE,
  '885': TOLL_FREE, '886': TOLL_FREE, '887': TOLL_FREE, '888': TOLL_FREE, '889': TOLL_FREE,
  '500': PERSONAL, '521': PERSONAL, '522': PERSONAL, '523': PERSONAL, '524': PERSONAL, '525': PERSONAL,
  '526': PERSONAL, '527': PERSONAL, '528': PERSONAL, '529': PERSONAL, '533': PERSONAL, '544': PERSONAL,
  '566': PERSONAL, '577': PERSONAL, '588': PERSONAL,
  '600': 'Canadian non-geographic service', '622': 'Canadian non-geographic service',
  '633': 'Canadian non-geographic service', '644': 'Canadian non-geographic service',
  '700': 'carrier service', '710': 'US federal government service', '900': 'premium-rate service', '456': 'inbound international service',
};
