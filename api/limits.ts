// The limits the API documents for what a number carries: the server enforces them, clients check against them first.

/** Most variables a number carries (and names in `varNames`). */
export const MAX_VARIABLES = 50;
/** The longest value of one variable, in UTF-16 code units (JavaScript's `length`, as the server measures it). */
export const MAX_VAR_VALUE = 1000;
/** The longest variable name in `varNames`. */
export const MAX_VAR_NAME = 100;
