// Package managedfields reads server-side apply ownership from an object's managedFields.
package managedfields
