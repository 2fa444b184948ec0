import type { GeoContinent } from './schemas'

// The continent of a country, for the replay of a policy's continent rules against stored access
// rows (server/utils/access/replay.ts): rows keep the country the database gave at ingestion, not
// the continent. Continents as GeoNames assigns them, which is what MaxMind-format databases write
// in continent.code (Turkey, Cyprus's neighbours and the Caucasus in Asia, Russia and Cyprus in
// Europe, Timor-Leste and the US minor islands in Oceania, the southern islands in Antarctica).
// Every code isCountryCode accepts has one, retired codes (AN, CS, SU, YU...) included, which a
// rule may name though no database places an address there (tests/unit/access-replay.test.ts).

const _BY_CONTINENT: Record<GeoContinent, string> = {
  AF: 'AC AO BF BI BJ BW CD CF CG CI CM CV DJ DY DZ EA EG EH ER ET GA GH GM GN GQ GW HV IC KE KM LR LS LY MA MG ML MR MU MW MZ NA NE NG RE RH RW SC SD SH SL SN SO SS ST SZ TA TD TG TN TZ UG YT ZA ZM ZR ZW',
  AN: 'AQ BV GS HM TF',
  AS: 'AE AF AM AZ BD BH BN BT BU CC CN CX DG GE HK ID IL IN IO IQ IR JO JP KG KH KP KR KW KZ LA LB LK MM MN MO MV MY NP OM PH PK PS QA SA SG SY TH TJ TM TR TW UZ VD VN YD YE',
  EU: 'AD AL AT AX BA BE BG BY CH CQ CS CY CZ DD DE DK EE ES FI FO FR FX GB GG GI GR HR HU IE IM IS IT JE LI LT LU LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM SU UA UK VA XK YU',
  NA: 'AG AI AN AW BB BL BM BQ BS BZ CA CP CR CU CW DM DO GD GL GP GT HN HT JM KN KY LC MF MQ MS MX NI PA PM PR SV SX TC TT US VC VG VI',
  OC: 'AS AU CK FJ FM GU KI MH MP NC NF NH NR NU NZ PF PG PN PW SB TK TL TO TP TV UM VU WF WS',
  SA: 'AR BO BR CL CO EC FK GF GY PE PY SR UY VE',
}

const _CONTINENT_OF = new Map<string, GeoContinent>(
  (Object.entries(_BY_CONTINENT) as Array<[GeoContinent, string]>).flatMap(([continent, codes]) =>
    codes.split(' ').map((cc) => [cc, continent] as [string, GeoContinent]),
  ),
)

/** The continent of an upper-case country code; null for none (LAN, an unknown code). */
export function continentOf(country: string | null): GeoContinent | null {
  return country ? (_CONTINENT_OF.get(country) ?? null) : null
}

/** Every code with a continent (the unit test checks it against isCountryCode). */
export const COUNTRIES_WITH_CONTINENT: readonly string[] = [..._CONTINENT_OF.keys()]
